package nodeproxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/sandgate/sandgate/internal/informer"
)

// Calls to the auth API, the values of the authapi_unreachable metric's
// label.
const (
	callRenew   = "renew"
	callRedeem  = "redeem"
	callWake    = "wake"
	callForward = "forward" // sign-in pages and forms, forwarded
)

// authAPIDown is ErrAuthAPIUnavailable for one call: no auth API replica
// answered it. It is never a refusal: the browser keeps its cookie and
// tries again after retry.
type authAPIDown struct {
	call  string
	retry time.Duration
	cause string // short and safe: never a token or a response byte
}

func (e *authAPIDown) Error() string {
	return fmt.Sprintf("%s: %s: %s", ErrAuthAPIUnavailable, e.call, e.cause)
}

func (e *authAPIDown) Is(target error) bool { return target == ErrAuthAPIUnavailable }

// retrySeconds is retry in whole seconds, at least 1, as Retry-After says it.
func retrySeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// authAPIDownMessage is what the client is told about err, which wraps
// ErrAuthAPIUnavailable.
func authAPIDownMessage(err error) string {
	retry := DefaultRetryAfter
	if d, ok := errors.AsType[*authAPIDown](err); ok {
		retry = d.retry
	}
	return fmt.Sprintf("the sign-in service is unreachable, try again in %d s", retrySeconds(retry))
}

// unreachableStatus reports auth API statuses that say it cannot answer
// the call now (5xx: no replica behind a gateway, or one that cannot reach
// what it needs), as opposed to an answer: the session is not refused.
func unreachableStatus(status int) bool { return status >= http.StatusInternalServerError }

// reachability remembers that the auth API could not be reached, so that
// renewals within retry of a failed one fail at once instead of each
// waiting for RenewTimeout, and a valid session is served from the caches
// without delay. The first call after retry tries again, and its success
// ends the outage.
type reachability struct {
	retry time.Duration
	now   func() time.Time
	log   *slog.Logger
	m     *metrics

	mu   sync.Mutex
	down bool
	next time.Time // no call before this while down
}

func newReachability(o Options, m *metrics) *reachability {
	return &reachability{retry: o.RetryAfter, now: o.Now, log: o.Logger.With("component", "nodeproxy"), m: m}
}

// check returns an authAPIDown for call while a recent call found the auth
// API unreachable, else nil.
func (r *reachability) check(call string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down && r.now().Before(r.next) {
		return &authAPIDown{call: call, retry: r.retry, cause: "unreachable moments ago"}
	}
	return nil
}

// failed records that call reached no replica and returns its error.
func (r *reachability) failed(call, cause string) error {
	r.m.authAPIUnreachable.WithLabelValues(call).Inc()
	r.mu.Lock()
	if !r.down {
		r.log.Warn("auth API unreachable; sessions that need it are answered 503 until it is back", "call", call, "err", cause)
	}
	r.down, r.next = true, r.now().Add(r.retry)
	r.mu.Unlock()
	return &authAPIDown{call: call, retry: r.retry, cause: cause}
}

// reached records an answer from the auth API.
func (r *reachability) reached() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		r.log.Info("auth API reachable again")
	}
	r.down = false
}

// unwakeable is the outage a wake met, when waiting would not help: the
// auth API could not be asked, and a suspended sandbox wakes only when it
// is. A sandbox already starting (Pending) is waited for anyway.
func unwakeable(e informer.Entry, wakeErr error) error {
	if errors.Is(wakeErr, ErrAuthAPIUnavailable) && e.Route.State == informer.StateSuspended {
		return wakeErr
	}
	return nil
}
