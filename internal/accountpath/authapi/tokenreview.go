package authapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tokenReviewCacheSize bounds remembered TokenReview results; there is one
// token per node proxy, so this is generous.
const tokenReviewCacheSize = 1024

// tokenReviewer is the part of the TokenReview client the guard uses.
type tokenReviewer interface {
	Create(ctx context.Context, tr *authnv1.TokenReview, opts metav1.CreateOptions) (*authnv1.TokenReview, error)
}

// guard admits internal calls only from allowed ServiceAccounts: the caller
// sends its projected token (bound to the internal audience) as a bearer
// token, the API server reviews it, and the result is cached briefly, keyed
// by the token's SHA-256, so a busy proxy costs one review per TTL.
//
// Each review loads the API server, so reviews of tokens that have not
// passed one (random tokens from anyone who reaches /internal/) are
// rate limited per client and across all clients; a token that passed is
// vouched for and reviewed again whenever its result expires, whatever
// others spend.
type guard struct {
	reviews  tokenReviewer
	audience string
	allowed  []string
	ttl      time.Duration
	now      func() time.Time
	m        *Metrics
	cache    *lru.Cache[[32]byte, review]

	trusted     []netip.Prefix
	callers     *limiter
	budget      budget
	budgetLimit int
	vouched     *lru.Cache[[32]byte, struct{}]
}

// review is one remembered TokenReview outcome.
type review struct {
	user   string
	err    error // nil, ErrCallerUnauthenticated or ErrCallerForbidden
	expiry time.Time
}

func newGuard(o Options) *guard {
	c, _ := lru.New[[32]byte, review](tokenReviewCacheSize)   // size is positive
	v, _ := lru.New[[32]byte, struct{}](tokenReviewCacheSize) // size is positive
	return &guard{
		reviews:     o.Kube.AuthenticationV1().TokenReviews(),
		audience:    o.InternalAudience,
		allowed:     o.AllowedServiceAccounts,
		ttl:         o.TokenReviewCacheTTL,
		now:         o.Now,
		m:           o.Metrics,
		cache:       c,
		trusted:     o.TrustedProxies,
		callers:     newLimiter(o.InternalReviewLimit, budgetWindow, o.Now),
		budgetLimit: o.InternalReviewBudget,
		vouched:     v,
	}
}

// check returns the ServiceAccount username behind r's bearer token, or an
// error wrapping ErrCallerUnauthenticated, ErrCallerForbidden,
// ErrRateLimited or ErrUnavailable (the last two not cached).
func (g *guard) check(ctx context.Context, r *http.Request) (string, error) {
	tok := bearer(r)
	if tok == "" {
		g.m.TokenReviews.WithLabelValues("unauthenticated", "false").Inc()
		return "", fmt.Errorf("%w: no bearer token", ErrCallerUnauthenticated)
	}
	key := sha256.Sum256([]byte(tok))
	if rv, ok := g.cache.Get(key); ok && g.now().Before(rv.expiry) {
		g.m.TokenReviews.WithLabelValues(outcomeOf(rv.err), "true").Inc()
		return rv.user, rv.err
	}
	if !g.vouched.Contains(key) {
		if err := g.admit(r); err != nil {
			g.m.TokenReviews.WithLabelValues("rate_limited", "false").Inc()
			return "", err
		}
	}
	start := time.Now()
	res, err := g.reviews.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{
		Token: tok, Audiences: []string{g.audience},
	}}, metav1.CreateOptions{})
	g.m.Stage.WithLabelValues("token_review").Observe(since(start))
	if err != nil {
		g.m.TokenReviews.WithLabelValues("error", "false").Inc()
		return "", fmt.Errorf("token review: %w: %w", ErrUnavailable, err)
	}
	rv := review{user: res.Status.User.Username, expiry: g.now().Add(g.ttl)}
	switch {
	case !res.Status.Authenticated || !slices.Contains(res.Status.Audiences, g.audience):
		rv.err = fmt.Errorf("%w: token not valid for audience %q", ErrCallerUnauthenticated, g.audience)
	case !slices.Contains(g.allowed, rv.user):
		rv.err = fmt.Errorf("%w: %s", ErrCallerForbidden, rv.user)
	}
	g.cache.Add(key, rv)
	if rv.err == nil {
		g.vouched.Add(key, struct{}{})
	} else {
		g.vouched.Remove(key)
	}
	g.m.TokenReviews.WithLabelValues(outcomeOf(rv.err), "false").Inc()
	return rv.user, rv.err
}

// admit spends one review from r's client and from the budget all clients
// share, or returns ErrRateLimited with the wait.
func (g *guard) admit(r *http.Request) error {
	client := clientAddr(r, g.trusted)
	ok, wait := g.callers.allow(client)
	if ok {
		ok, wait = g.budget.take(g.now(), g.budgetLimit, budgetWindow)
	}
	if !ok {
		return withRetryAfter(fmt.Errorf("%w: token reviews for %s", ErrRateLimited, client), wait)
	}
	return nil
}

func outcomeOf(err error) string {
	switch {
	case err == nil:
		return "allowed"
	case errors.Is(err, ErrCallerForbidden):
		return "denied"
	default:
		return "unauthenticated"
	}
}

// wrap admits only allowed callers to next.
func (g *guard) wrap(s *Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, err := g.check(r.Context(), r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), callerKey{}, caller))
		next.ServeHTTP(w, r)
	})
}

// callerKey is the context key of the internal caller's username.
type callerKey struct{}

// Caller returns the ServiceAccount username of an internal request that
// passed the TokenReview guard, for handlers added with HandleInternal.
func Caller(r *http.Request) string {
	u, _ := r.Context().Value(callerKey{}).(string)
	return u
}
