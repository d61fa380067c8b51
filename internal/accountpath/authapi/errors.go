package authapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/account"
)

// Outcomes that decide a response. statusOf maps each to a status code; the
// client sees the sentinel's text (or an invalid user name's reason), the log
// the wrapped cause.
var (
	// ErrBadRequest reports an unreadable or incomplete request.
	ErrBadRequest = errors.New("bad request")
	// ErrUnsupportedMedia reports a body that is neither a form nor JSON.
	ErrUnsupportedMedia = errors.New("send a form or a JSON body")
	// ErrTooLarge reports a body above MAX_BODY_MB.
	ErrTooLarge = errors.New("request body too large")
	// ErrRateLimited reports a client over AUTH_RATE_LIMIT in its window.
	ErrRateLimited = errors.New("too many requests, try again later")
	// ErrBadInvite reports a missing or wrong signup invite code.
	ErrBadInvite = errors.New("a valid invite code is required")
	// ErrBadOrigin reports a mutation whose Origin or Referer is not this site.
	ErrBadOrigin = errors.New("cross-origin request refused")
	// ErrNotNavigation reports a session-authenticated request for a new
	// bearer token that is not a top-level navigation (checkTokenRecipient).
	ErrNotNavigation = errors.New("a new token is only shown on a page the browser opens: scripts must use the bearer token, browsers the form on the account page")
	// ErrNotAdmin reports an authenticated account that is not an admin on
	// an admin route.
	ErrNotAdmin = errors.New("admins only")
	// ErrAdminNotPage reports a session-authenticated admin request that
	// is not a top-level navigation: a script (an agent's, on the shared
	// origin) must never read or drive the admin pages.
	ErrAdminNotPage = errors.New("the admin pages open only as pages the browser shows: scripts must use the admin API with a bearer token")
	// ErrBadFormToken reports an admin form post without this session's
	// form token.
	ErrBadFormToken = errors.New("this form has expired: open the admin page again")
	// ErrExists reports a signup for a user that already has an account.
	ErrExists = errors.New("user already exists: log in with your token")
	// ErrBadCredentials reports a login that failed, for whatever reason.
	ErrBadCredentials = errors.New("invalid user or token")
	// ErrNoSession reports a request without a valid, unrevoked session.
	ErrNoSession = errors.New("not logged in")
	// ErrForbidden reports an authenticated user acting on another account.
	ErrForbidden = errors.New("not your account")
	// ErrNoAccount reports an authenticated user whose account is gone.
	ErrNoAccount = errors.New("no such account")
	// ErrNotConfirmed reports a destructive form post without its confirmation.
	ErrNotConfirmed = errors.New("confirmation does not match")
	// ErrCallerUnauthenticated reports an internal call without a valid
	// ServiceAccount token.
	ErrCallerUnauthenticated = errors.New("caller not authenticated")
	// ErrCallerForbidden reports an internal call from a ServiceAccount that
	// is not allowed.
	ErrCallerForbidden = errors.New("caller not allowed")
	// ErrSessionEnded reports a renewal of a session that was revoked, has
	// passed its maximum age, or whose account is gone.
	ErrSessionEnded = errors.New("session ended")
	// ErrBadToken reports a renewal of a token that fails verification.
	ErrBadToken = errors.New("invalid session token")
	// ErrNotFound reports an unknown path.
	ErrNotFound = errors.New("not found")
	// ErrUnavailable reports that the API server or the signing keys are not
	// usable right now.
	ErrUnavailable = errors.New("service unavailable, try again")
)

// retryAfter carries the Retry-After delay of a 429 or 503.
type retryAfter struct {
	err   error
	delay time.Duration
}

func (e *retryAfter) Error() string { return e.err.Error() }
func (e *retryAfter) Unwrap() error { return e.err }

func withRetryAfter(err error, d time.Duration) error { return &retryAfter{err: err, delay: d} }

// statusOf is the one place that maps an outcome to a status code, a metric
// reason and the message the client may see.
func statusOf(err error) (code int, reason, message string) {
	switch {
	case errors.Is(err, ErrRateLimited):
		return http.StatusTooManyRequests, "rate_limited", ErrRateLimited.Error()
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "too_large", ErrTooLarge.Error()
	case errors.Is(err, ErrUnsupportedMedia):
		return http.StatusUnsupportedMediaType, "unsupported_media", ErrUnsupportedMedia.Error()
	case errors.Is(err, account.ErrInvalidUser):
		return http.StatusBadRequest, "invalid_user", publicText(err, account.ErrInvalidUser)
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest, "bad_request", publicText(err, ErrBadRequest)
	case errors.Is(err, ErrNotConfirmed):
		return http.StatusBadRequest, "not_confirmed", ErrNotConfirmed.Error()
	case errors.Is(err, ErrBadToken):
		return http.StatusBadRequest, "bad_token", ErrBadToken.Error()
	case errors.Is(err, ErrBadInvite):
		return http.StatusForbidden, "bad_invite", ErrBadInvite.Error()
	case errors.Is(err, ErrBadOrigin):
		return http.StatusForbidden, "bad_origin", ErrBadOrigin.Error()
	case errors.Is(err, ErrNotNavigation):
		return http.StatusForbidden, "not_navigation", ErrNotNavigation.Error()
	case errors.Is(err, ErrNotAdmin):
		return http.StatusForbidden, "not_admin", ErrNotAdmin.Error()
	case errors.Is(err, ErrAdminNotPage):
		return http.StatusForbidden, "admin_not_page", ErrAdminNotPage.Error()
	case errors.Is(err, ErrBadFormToken):
		return http.StatusForbidden, "bad_form_token", ErrBadFormToken.Error()
	case errors.Is(err, ErrBadEntryCode):
		return http.StatusForbidden, "bad_entry_code", ErrBadEntryCode.Error()
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden, "forbidden", ErrForbidden.Error()
	case errors.Is(err, ErrCallerForbidden):
		return http.StatusForbidden, "caller_forbidden", ErrCallerForbidden.Error()
	case errors.Is(err, ErrBadCredentials):
		return http.StatusUnauthorized, "bad_credentials", ErrBadCredentials.Error()
	case errors.Is(err, ErrNoSession):
		return http.StatusUnauthorized, "no_session", ErrNoSession.Error()
	case errors.Is(err, ErrCallerUnauthenticated):
		return http.StatusUnauthorized, "caller_unauthenticated", ErrCallerUnauthenticated.Error()
	case errors.Is(err, ErrExists):
		return http.StatusConflict, "exists", ErrExists.Error()
	case errors.Is(err, ErrRecreating):
		return http.StatusConflict, "recreating", ErrRecreating.Error()
	case errors.Is(err, ErrSessionEnded):
		return http.StatusGone, "session_ended", ErrSessionEnded.Error()
	case errors.Is(err, ErrNoAccount):
		return http.StatusNotFound, "no_account", ErrNoAccount.Error()
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, "not_found", ErrNotFound.Error()
	default: // ErrUnavailable and anything unexpected
		return http.StatusServiceUnavailable, "unavailable", ErrUnavailable.Error()
	}
}

// publicError is a client-safe detail attached to a sentinel.
type publicError struct {
	sentinel error
	text     string
}

func (e *publicError) Error() string { return e.sentinel.Error() + ": " + e.text }
func (e *publicError) Unwrap() error { return e.sentinel }

// badRequest returns ErrBadRequest with a detail the client may see; it must
// never contain secrets.
func badRequest(format string, args ...any) error {
	return &publicError{sentinel: ErrBadRequest, text: fmt.Sprintf(format, args...)}
}

// invalidUser turns an account.ValidateUser error into one whose reason the
// client sees; the reasons name only the rule that failed.
func invalidUser(err error) error {
	text := strings.TrimPrefix(err.Error(), account.ErrInvalidUser.Error()+": ")
	return &publicError{sentinel: account.ErrInvalidUser, text: text}
}

// publicText returns the client-safe text of err: its publicError detail, or
// the sentinel alone.
func publicText(err, sentinel error) string {
	var pe *publicError
	if errors.As(err, &pe) {
		return pe.Error()
	}
	return sentinel.Error()
}

// retryAfterHeader returns the Retry-After value of err, if any.
func retryAfterHeader(err error) (string, bool) {
	var ra *retryAfter
	if !errors.As(err, &ra) {
		return "", false
	}
	secs := int64((ra.delay + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return strconv.FormatInt(secs, 10), true
}
