package authapi

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/jwt"
)

func TestOptionsValidateReportsEverything(t *testing.T) {
	err := Options{
		ClaimPrefix: strings.Repeat("p", 30), SessionTTL: -time.Second, RateLimit: -1, MaxBodyBytes: -1, CookieName: "bad name",
		SignupBudget: -1, InternalReviewLimit: -1, InternalReviewBudget: -1,
	}.Validate()
	if err == nil {
		t.Fatal("bad options accepted")
	}
	for _, want := range []string{"kube client", "sandbox client", "namespace", "claim prefix", "session TTL", "rate limit", "max body", "cookie name",
		"signup budget", "internal review limit", "internal review budget"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate does not report %s: %v", want, err)
		}
	}
}

func TestBudgetDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.SignupBudget != DefaultSignupBudget || o.InternalReviewLimit != DefaultInternalReviewLimit || o.InternalReviewBudget != DefaultInternalReviewBudget {
		t.Errorf("budgets %d/%d/%d, want the defaults", o.SignupBudget, o.InternalReviewLimit, o.InternalReviewBudget)
	}
}

func TestCookieNameFollowsSecure(t *testing.T) {
	if got := (Options{CookieSecure: true}).withDefaults().CookieName; got != "__Host-dsh_gw_session" {
		t.Errorf("secure default cookie name %q", got)
	}
	if got := (Options{}).withDefaults().CookieName; got != "dsh_gw_session" {
		t.Errorf("insecure default cookie name %q", got)
	}
	if got := (Options{CookieSecure: true, CookieName: "mine"}).withDefaults().CookieName; got != "mine" {
		t.Errorf("explicit cookie name %q", got)
	}
}

func TestStatusOf(t *testing.T) {
	cases := []struct {
		err    error
		code   int
		reason string
	}{
		{withRetryAfter(ErrRateLimited, time.Second), 429, "rate_limited"},
		{ErrTooLarge, 413, "too_large"},
		{ErrUnsupportedMedia, 415, "unsupported_media"},
		{invalidUser(account.ValidateUser("Bob")), 400, "invalid_user"},
		{badRequest("x"), 400, "bad_request"},
		{ErrNotConfirmed, 400, "not_confirmed"},
		{ErrBadToken, 400, "bad_token"},
		{ErrBadInvite, 403, "bad_invite"},
		{ErrBadOrigin, 403, "bad_origin"},
		{ErrForbidden, 403, "forbidden"},
		{ErrCallerForbidden, 403, "caller_forbidden"},
		{ErrBadCredentials, 401, "bad_credentials"},
		{ErrNoSession, 401, "no_session"},
		{ErrCallerUnauthenticated, 401, "caller_unauthenticated"},
		{ErrExists, 409, "exists"},
		{ErrSessionEnded, 410, "session_ended"},
		{ErrNoAccount, 404, "no_account"},
		{ErrNotFound, 404, "not_found"},
		{ErrUnavailable, 503, "unavailable"},
		{errors.New("anything else"), 503, "unavailable"},
		{jwt.ErrBadSignature, 503, "unavailable"},
	}
	for _, tc := range cases {
		code, reason, msg := statusOf(tc.err)
		if code != tc.code || reason != tc.reason || msg == "" {
			t.Errorf("statusOf(%v) = %d %s %q, want %d %s", tc.err, code, reason, msg, tc.code, tc.reason)
		}
	}
	if _, _, msg := statusOf(invalidUser(account.ValidateUser("Bob"))); !strings.Contains(msg, "lowercase") {
		t.Errorf("invalid user message %q lacks the rule", msg)
	}
	if _, _, msg := statusOf(errors.Join(ErrUnavailable, errors.New("secret detail"))); strings.Contains(msg, "secret") {
		t.Errorf("message %q leaks the cause", msg)
	}
	if v, ok := retryAfterHeader(withRetryAfter(ErrRateLimited, 1500*time.Millisecond)); !ok || v != "2" {
		t.Errorf("Retry-After %q", v)
	}
}
