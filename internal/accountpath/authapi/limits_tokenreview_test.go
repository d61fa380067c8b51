package authapi

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

const (
	goodInternalToken = "good-projected-token"
	proxyAccount      = "system:serviceaccount:sandgate:nodeproxy"
)

// countingReviewer stands in for the TokenReview API: it counts reviews and
// authenticates only goodInternalToken.
type countingReviewer struct {
	mu    sync.Mutex
	count int
}

func (c *countingReviewer) Create(_ context.Context, tr *authnv1.TokenReview, _ metav1.CreateOptions) (*authnv1.TokenReview, error) {
	c.mu.Lock()
	c.count++
	c.mu.Unlock()
	out := tr.DeepCopy()
	if tr.Spec.Token == goodInternalToken {
		out.Status = authnv1.TokenReviewStatus{
			Authenticated: true, Audiences: tr.Spec.Audiences,
			User: authnv1.UserInfo{Username: proxyAccount},
		}
	}
	return out, nil
}

func (c *countingReviewer) reviews() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

func newTestGuard(clock *testkit.Clock) (*guard, *countingReviewer) {
	o := Options{
		Kube:                   fake.NewClientset(),
		AllowedServiceAccounts: []string{proxyAccount},
		TrustedProxies:         []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		InternalReviewLimit:    5,
		InternalReviewBudget:   20,
		Now:                    clock.Now,
	}.withDefaults()
	g := newGuard(o)
	fr := &countingReviewer{}
	g.reviews = fr
	return g, fr
}

// internalCall is one request to an internal route: from peer, through
// X-Forwarded-For xff when set, with token.
func internalCall(g *guard, peer, xff, token string) error {
	r := httptest.NewRequest("POST", "/internal/v1/wake", nil)
	r.RemoteAddr = peer + ":4000"
	if xff != "" {
		r.Header.Set("X-Forwarded-For", xff)
	}
	r.Header.Set("Authorization", "Bearer "+token)
	_, err := g.check(context.Background(), r)
	return err
}

func TestFailedInternalAuthIsRateLimited(t *testing.T) {
	cases := []struct {
		name       string
		peer       func(i int) (peer, xff string)
		maxReviews int
	}{
		{"one client: its own limit", func(int) (string, string) { return "203.0.113.5", "" }, 5},
		{"one IPv6 /64: one client", func(i int) (string, string) { return fmt.Sprintf("2001:db8:0:7::%x", i+1), "" }, 5},
		{"one client behind a node proxy", func(int) (string, string) { return "10.1.1.1", "203.0.113.5" }, 5},
		{"many clients: the global budget", func(i int) (string, string) { return fmt.Sprintf("198.51.%d.%d", i/250, i%250+1), "" }, 20},
		{"many clients behind one node proxy", func(i int) (string, string) { return "10.1.1.1", fmt.Sprintf("198.51.%d.%d", i/250, i%250+1) }, 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, fr := newTestGuard(testkit.NewClock(testkit.Epoch))
			limited := 0
			for i := range 200 {
				peer, xff := tc.peer(i)
				err := internalCall(g, peer, xff, fmt.Sprintf("random-token-%d", i))
				switch {
				case errors.Is(err, ErrRateLimited):
					limited++
				case !errors.Is(err, ErrCallerUnauthenticated):
					t.Fatalf("call %d: %v", i, err)
				}
			}
			if n := fr.reviews(); n > tc.maxReviews {
				t.Errorf("200 bad tokens caused %d TokenReviews, budget %d", n, tc.maxReviews)
			}
			if limited == 0 {
				t.Error("no call answered 429")
			}
		})
	}
}

func TestFailedTokenIsReviewedOncePerTTL(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	g, fr := newTestGuard(clock)
	for range 50 {
		if err := internalCall(g, "203.0.113.5", "", "same-bad-token"); !errors.Is(err, ErrCallerUnauthenticated) {
			t.Fatalf("bad token: %v", err)
		}
	}
	if n := fr.reviews(); n != 1 {
		t.Errorf("one bad token repeated caused %d reviews, want 1", n)
	}
}

// TestKnownGoodTokenPassesAnExhaustedBudget: an attack that spends every
// review budget does not lock out a node proxy whose token passed before.
func TestKnownGoodTokenPassesAnExhaustedBudget(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	g, fr := newTestGuard(clock)
	const proxy = "10.2.0.7"
	if err := internalCall(g, proxy, "", goodInternalToken); err != nil {
		t.Fatalf("good token: %v", err)
	}
	for i := range 100 {
		internalCall(g, fmt.Sprintf("198.51.100.%d", i+1), "", fmt.Sprintf("random-token-%d", i))
	}
	if err := internalCall(g, "198.51.101.1", "", "one-more"); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("budget not exhausted: %v", err)
	}
	clock.Advance(g.ttl)
	before := fr.reviews()
	if err := internalCall(g, proxy, "", goodInternalToken); err != nil {
		t.Errorf("known-good token after its cache entry expired: %v", err)
	}
	if fr.reviews() != before+1 {
		t.Error("known-good token was not reviewed again")
	}
}
