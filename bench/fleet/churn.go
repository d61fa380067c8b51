package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// Churn is the background change rate, per second of each kind, that a
// fleet measurement runs its churned reaches under: new accounts, logouts
// of every session (a claim's epoch raised), idle suspends and wakes (a
// Sandbox's operatingMode set).
type Churn struct {
	Signups, Logouts, Suspends, Wakes float64
}

// churnKinds name Churn's fields in ParseChurn's and String's form.
var churnKinds = []string{"signups", "logouts", "suspends", "wakes"}

// rates are c's fields in churnKinds' order.
func (c *Churn) rates() []*float64 { return []*float64{&c.Signups, &c.Logouts, &c.Suspends, &c.Wakes} }

// ParseChurn reads "signups=1,logouts=2,suspends=5,wakes=5": a kind left
// out is 0, a rate is a non-negative number of changes per second, at
// most maxRate.
func ParseChurn(s string) (Churn, error) {
	var c Churn
	seen := map[string]bool{}
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		k, v, ok := strings.Cut(f, "=")
		i := slices.Index(churnKinds, strings.TrimSpace(k))
		if !ok || i < 0 || seen[churnKinds[i]] {
			return Churn{}, fmt.Errorf("churn %q: want kind=rate pairs, each of %s at most once", s, strings.Join(churnKinds, ", "))
		}
		seen[churnKinds[i]] = true
		r, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(r >= 0 && r <= maxRate) {
			return Churn{}, fmt.Errorf("churn %q: %s rate %q is not a number of changes per second from 0 to %d", s, churnKinds[i], v, maxRate)
		}
		*c.rates()[i] = r
	}
	return c, nil
}

// maxRate bounds one kind's rate: a change is one API call, made one at a
// time.
const maxRate = 1000

// String is c in ParseChurn's form.
func (c Churn) String() string {
	parts := make([]string, len(churnKinds))
	for i, r := range c.rates() {
		parts[i] = churnKinds[i] + "=" + strconv.FormatFloat(*r, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// Total is the changes per second of every kind.
func (c Churn) Total() float64 { return c.Signups + c.Logouts + c.Suspends + c.Wakes }

// churner makes Churn's changes on accounts from first to users-1, apart
// from the ones the reaches measure, and creates its signups after users.
type churner struct {
	sb           *sandboxapi.Client
	first, users int
	next         atomic.Int64 // the next signup's account index

	mu        sync.Mutex
	suspended map[int]bool // accounts whose Sandbox this churner suspended
}

func newChurner(sb *sandboxapi.Client, first, users int) *churner {
	c := &churner{sb: sb, first: first, users: users, suspended: map[int]bool{}}
	c.next.Store(int64(users))
	return c
}

// run makes c's changes at their rates until ctx ends, and returns how
// many it made and the first that failed.
func (ch *churner) run(ctx context.Context, c Churn) (int64, error) {
	ops := []func(context.Context) (bool, error){ch.signup, ch.logout, ch.suspend, ch.wake}
	var wg sync.WaitGroup
	var made atomic.Int64
	errs := make([]error, len(ops))
	for i, r := range c.rates() {
		if *r == 0 {
			continue
		}
		every := time.Duration(float64(time.Second) / *r)
		wg.Go(func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				did, err := ops[i](ctx)
				if err != nil && ctx.Err() == nil {
					errs[i] = fmt.Errorf("churn %s: %w", churnKinds[i], err)
					return
				}
				if did {
					made.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return made.Load(), errors.Join(errs...)
}

// The changes report whether they made one: a suspend of a sandbox the
// churn suspended already, or a wake with none, makes none.

func (ch *churner) signup(ctx context.Context) (bool, error) {
	return true, createAccount(ctx, ch.sb, int(ch.next.Add(1)-1))
}

// pick is a random account the churn may change.
func (ch *churner) pick() int { return ch.first + rand.IntN(ch.users-ch.first) }

func (ch *churner) logout(ctx context.Context) (bool, error) {
	return true, raiseEpoch(ctx, ch.sb, userName(ch.pick()))
}

func (ch *churner) suspend(ctx context.Context) (bool, error) {
	i := ch.pick()
	ch.mu.Lock()
	if ch.suspended[i] {
		ch.mu.Unlock()
		return false, nil
	}
	ch.suspended[i] = true
	ch.mu.Unlock()
	return true, setMode(ctx, ch.sb, i, agents.OperatingModeSuspended)
}

func (ch *churner) wake(ctx context.Context) (bool, error) {
	ch.mu.Lock()
	i, found := 0, false
	for i = range ch.suspended {
		found = true
		break
	}
	delete(ch.suspended, i)
	ch.mu.Unlock()
	if !found {
		return false, nil
	}
	return true, setMode(ctx, ch.sb, i, agents.OperatingModeRunning)
}
