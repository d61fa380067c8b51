package authapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// holdFinalizer keeps a claim being deleted in the API server until the
// test lets it go.
const holdFinalizer = "sandgate.test/hold"

// TestSignupRefusesANameAReservationHolds: while a recreate holds a user
// name (its Lease exists), a signup for that name answers 409 and leaves
// no claim behind, even though the claim name was free.
func TestSignupRefusesANameAReservationHolds(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	in := e.start(t, nil)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: in.srv.reserved.name("alice")}}
	if _, err := e.kube.CoordinationV1().Leases(e.ns).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, body := in.do(t, req{method: "POST", path: "/users", json: `{"user":"alice"}`})
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("signup of a reserved name: %d %s, want 409", resp.StatusCode, body)
	}
	testkit.Eventually(t, "the refused signup's claim gone", func() bool {
		_, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	in.signupJSON(t, "bob")
}

// TestReservationCheck is the rule a signup's claim is checked by after
// its create, at the claim's creation time: a reservation younger than
// reservationTTL then holds the name, an older one or none does not.
func TestReservationCheck(t *testing.T) {
	e, in := warmStart(t)
	lease, err := e.kube.CoordinationV1().Leases(e.ns).Create(t.Context(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: in.srv.reserved.name("alice")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	made := lease.CreationTimestamp.Time
	for _, tt := range []struct {
		name string
		user string
		at   time.Time
		held bool
	}{
		{"a claim made as the reservation was", "alice", made, true},
		{"a claim made just inside the reservation's life", "alice", made.Add(reservationTTL - time.Second), true},
		{"a claim made once the reservation expired", "alice", made.Add(reservationTTL), false},
		{"another name", "bob", made, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := in.srv.reserved.check(t.Context(), tt.user, tt.at)
			if held := errors.Is(err, ErrExists); held != tt.held || (err != nil && !held) {
				t.Errorf("check(%s, %v): %v, want held %v", tt.user, tt.at, err, tt.held)
			}
		})
	}
}

// TestRecreateHoldsTheNameAgainstSignups recreates alice's account while
// her old claim is held in deletion by a finalizer. The reservation exists
// before the delete; once the old claim is gone, a claim made in the gap
// (as by a signup whose replica died before checking the reservation) is
// removed, every signup for alice meanwhile answers 409, and the account
// ends with the recreate's new token. A second recreate while one runs is
// refused. The reservation is gone afterwards.
func TestRecreateHoldsTheNameAgainstSignups(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	in := e.start(t, nil)
	// Signups are sent back to back below: past the global signup budget
	// they would be refused for that instead.
	other := e.start(t, func(o *Options) { o.SignupBudget = 1 << 20 })
	token, _ := in.signupJSON(t, "alice")
	setFinalizers(t, e, "dsh-alice", func(f []string) []string { return append(f, holdFinalizer) })

	type result struct {
		code int
		body string
	}
	done := make(chan result, 1)
	go func() {
		r, _ := http.NewRequest("POST", in.http.URL+"/recreate", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(r)
		if err != nil {
			done <- result{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- result{resp.StatusCode, string(b)}
	}()
	// The other replica's cache is where it reads accounts from: until the
	// deletion reaches it, the old token still authenticates there and the
	// reservation alone refuses the second recreate (409).
	seen, cancel := context.WithTimeout(t.Context(), testkit.Timeout)
	defer cancel()
	if _, ok := other.srv.claims.wait(seen, "dsh-alice", func(c *extensions.SandboxClaim) bool {
		return c != nil && c.DeletionTimestamp != nil
	}); !ok {
		t.Fatal("the other replica never saw the recreate deleting the old claim")
	}
	if _, err := e.kube.CoordinationV1().Leases(e.ns).Get(t.Context(), in.srv.reserved.name("alice"), metav1.GetOptions{}); err != nil {
		t.Fatalf("no reservation while the old claim is being deleted: %v", err)
	}
	// The claim being deleted is no account: a second recreate is refused
	// before it reaches the reservation (which would refuse it too).
	if resp, body := other.do(t, req{method: "POST", path: "/recreate", header: map[string]string{"Authorization": "Bearer " + token}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a second recreate while one runs: %d %s, want 401", resp.StatusCode, body)
	}

	setFinalizers(t, e, "dsh-alice", func(f []string) []string {
		return slices.DeleteFunc(f, func(s string) bool { return s == holdFinalizer })
	})
	intruder := (&claimStore{prefix: DefaultClaimPrefix, pool: DefaultWarmPool, ns: e.ns}).newClaim("alice", account.HashToken("intruder"), account.FirstEpoch)
	if _, err := e.claims.Create(t.Context(), intruder, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var got result
	for waiting := true; waiting; {
		select {
		case got = <-done:
			waiting = false
		default:
			resp, body := other.do(t, req{method: "POST", path: "/users", json: `{"user":"alice"}`})
			if resp.StatusCode != http.StatusConflict {
				t.Errorf("signup of alice during her recreate: %d %s, want 409", resp.StatusCode, body)
			}
		}
	}
	if got.code != http.StatusCreated {
		t.Fatalf("recreate: %d %s", got.code, got.body)
	}
	var out accountResponse
	mustJSON(t, got.body, &out)
	c, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := account.FromClaim(c); err != nil || !a.TokenMatches(out.Token) {
		t.Errorf("alice's claim after the recreate does not hold the recreate's token (%v)", err)
	}
	if _, err := e.kube.CoordinationV1().Leases(e.ns).Get(t.Context(), in.srv.reserved.name("alice"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("reservation after the recreate: %v, want gone", err)
	}
	in.login(t, out.Token)
}

// TestReservationLeftByADeadRecreateExpires: a reservation older than
// reservationTTL by the recreating replica's clock is replaced, a live one
// refuses the recreate.
func TestReservationLeftByADeadRecreateExpires(t *testing.T) {
	e := newEnv(t)
	clock := testkit.NewOffsetClock()
	r := newReservations(Options{Kube: e.kube, Namespace: e.ns, ClaimPrefix: DefaultClaimPrefix, Now: clock.Now})
	ctx := context.Background()
	first, err := r.reserve(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.reserve(ctx, "alice"); !errors.Is(err, ErrRecreating) {
		t.Fatalf("reserving a held name: %v, want ErrRecreating", err)
	}
	clock.Advance(reservationTTL + time.Minute)
	second, err := r.reserve(ctx, "alice")
	if err != nil || second.UID == first.UID {
		t.Fatalf("reserving over a dead recreate's leftover: %v", err)
	}
	if err := r.release(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := e.kube.CoordinationV1().Leases(e.ns).Get(ctx, second.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("releasing the leftover removed the live reservation: %v", err)
	}
	if err := r.release(ctx, second); err != nil {
		t.Fatal(err)
	}
}

// setFinalizers edits the finalizers of claim name.
func setFinalizers(t *testing.T, e *env, name string, edit func([]string) []string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := e.claims.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Finalizers = edit(c.Finalizers)
		_, err = e.claims.Update(t.Context(), c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
