package authapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/sandgate/sandgate/internal/account"
)

// ErrRecreating reports a recreate of an account whose recreate is
// already running.
var ErrRecreating = errors.New("this account is being recreated, try again shortly")

// reservationTTL is how long a reservation holds its name. It is far
// longer than a recreate takes (deleteWait, the create and its retries),
// so only a reservation left by a replica that died mid-recreate expires.
const reservationTTL = 5 * time.Minute

// reservations hold a user name while a recreate has deleted the user's
// claim and not yet created the new one. A reservation is a Lease,
// created before the delete and removed after the create. A signup checks
// for it before creating its claim, and again after, removing its claim
// if it finds one then: the API server orders the Lease's creation before
// the old claim's deletion, and that before any other claim of the name,
// so the second read cannot miss it.
type reservations struct {
	leases coordinationclient.LeaseInterface
	prefix string
	now    func() time.Time
}

func newReservations(o Options) *reservations {
	return &reservations{leases: o.Kube.CoordinationV1().Leases(o.Namespace), prefix: o.ClaimPrefix, now: o.Now}
}

// name is the Lease that reserves user's name.
func (r *reservations) name(user string) string {
	return "sandgate-recreate-" + account.ClaimName(r.prefix, user)
}

// reserve takes user's reservation. One that a dead recreate left behind
// (older than reservationTTL by this replica's clock) is replaced; a live
// one is ErrRecreating. The clock decides only when a leftover is cleared,
// never whether a signup may take the name.
func (r *reservations) reserve(ctx context.Context, user string) (*coordinationv1.Lease, error) {
	ttl := int32(reservationTTL / time.Second)
	now := metav1.NewMicroTime(r.now())
	want := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: r.name(user), Labels: map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: user}},
		Spec:       coordinationv1.LeaseSpec{LeaseDurationSeconds: &ttl, AcquireTime: &now},
	}
	for range 2 {
		l, err := r.leases.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			return l, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("reserve %s: %w: %w", user, ErrUnavailable, err)
		}
		held, err := r.leases.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reserve %s: read the reservation: %w: %w", user, ErrUnavailable, err)
		}
		if r.now().Sub(held.CreationTimestamp.Time) < reservationTTL {
			return nil, fmt.Errorf("reserve %s: %w", user, ErrRecreating)
		}
		if err := r.remove(ctx, held); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("reserve %s: %w", user, ErrRecreating)
}

// release removes the reservation l, exactly that one, even when the
// request has ended: a leftover would refuse recreates until it expires.
func (r *reservations) release(ctx context.Context, l *coordinationv1.Lease) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return r.remove(ctx, l)
}

func (r *reservations) remove(ctx context.Context, l *coordinationv1.Lease) error {
	err := r.leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &l.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("remove reservation %s: %w: %w", l.Name, ErrUnavailable, err)
	}
	return nil
}

// check reports ErrExists when a recreate holds user's name at the time
// at: a reservation created less than reservationTTL before it. A signup
// checks twice: before it creates its claim, at this replica's clock, so
// that a run of signups cannot keep a recreate's create failing; and after,
// at the claim's creation time, where both times are the API server's and
// the check cannot miss a reservation. A failed read counts as held, so a
// signup never keeps a name it could not check.
func (r *reservations) check(ctx context.Context, user string, at time.Time) error {
	l, err := r.leases.Get(ctx, r.name(user), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("signup %s: read reservation: %w: %w", user, ErrUnavailable, err)
	case at.Sub(l.CreationTimestamp.Time) >= reservationTTL:
		return nil
	}
	return fmt.Errorf("signup %s: the name is reserved by a recreate of its account: %w", user, ErrExists)
}
