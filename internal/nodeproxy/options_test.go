package nodeproxy

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
)

func TestOptionsValidate(t *testing.T) {
	bad := Options{
		AuthAPI: "ftp://x/y", RenewPath: "renew", CookieName: "bad name", PeerPort: 70000,
		MaxBodyBytes: -1, HeaderTimeout: -1, HeaderAllowlist: []string{"Cookie", "X-Forwarded-User", "bad header"},
	}
	err := bad.Validate()
	for _, want := range []string{"node name", "directory", "auth API URL", "renew path", "cookie name", "peer port",
		"max body bytes", "header timeout", `"Cookie" can never`, `"X-Forwarded-User" can never`, "not a header name"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want a %q problem", err, want)
		}
	}
	secure := Options{CookieName: "__Host-x"}
	if err := secure.Validate(); err == nil || !strings.Contains(err.Error(), "COOKIE_SECURE") {
		t.Errorf("__Host- cookie without Secure: %v", err)
	}
}

func TestDefaultCookieName(t *testing.T) {
	if o := (Options{}).withDefaults(); o.CookieName != DefaultCookieName {
		t.Errorf("insecure default cookie %q", o.CookieName)
	}
	if o := (Options{CookieSecure: true}).withDefaults(); o.CookieName != DefaultSecureCookieName {
		t.Errorf("secure default cookie %q", o.CookieName)
	}
}

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		close  int
		retry  bool
	}{
		{ErrBadRequest, 400, 1011, false},
		{ErrNotFound, 404, 1011, false},
		{ErrUnauthenticated, 401, 4401, false},
		{informer.ErrNoAccount, 401, 4401, false},
		{informer.ErrInvalidAccount, 401, 4401, false},
		{ErrBodyTooLarge, 413, 1011, false},
		{ErrClientClosed, 499, 1011, false},
		{ErrTooManyInFlight, 503, 1011, true},
		{ErrSuspended, 503, 1011, true},
		{ErrNotReady, 503, 1011, true},
		{ErrHopLoop, 503, 1011, true},
		{handshake.ErrNoToken, 503, 1011, true},
		{handshake.ErrNoLogs, 503, 1011, true},
		{handshake.ErrExchange, 502, 1011, false},
		{handshake.ErrNoCookie, 502, 1011, false},
		{ErrUpstream, 502, 1011, false},
		{ErrUpstreamTimeout, 504, 1011, false},
		{handshake.ErrInvalidRef, 500, 1011, false},
		{errors.New("surprise"), 500, 1011, false},
	} {
		r := outcome(errors.Join(errors.New("context"), tc.err))
		if r.status != tc.status || r.wsClose != tc.close || r.retryAfter != tc.retry {
			t.Errorf("outcome(%v) = %+v, want %d/%d/%v", tc.err, r, tc.status, tc.close, tc.retry)
		}
	}
}
