package authapi

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// fakeIdle is a sweeper that answers Idle with v.
type fakeIdle struct{ v sweeper.Suspension }

func (fakeIdle) Observe(activity.Report) error   { return nil }
func (fakeIdle) Leader() (sweeper.Leader, error) { return sweeper.Leader{}, nil }
func (f fakeIdle) Idle(*extensions.SandboxClaim, *agents.Sandbox, time.Time) sweeper.Suspension {
	return f.v
}

// TestSuspendFacts: the account page shows the suspension the idle rule
// gives, or says exactly why it cannot; never "after a while".
func TestSuspendFacts(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	const timeout = 30 * time.Minute
	for _, tc := range []struct {
		name     string
		activity Activity
		want     [][2]string
	}{
		{"leader, used recently", fakeIdle{sweeper.Suspension{IdleTimeout: timeout, LastActive: now.Add(-5 * time.Minute), Exact: true,
			Decision: sweeper.Decision{At: now.Add(25 * time.Minute), Reason: sweeper.ReasonActivity}}},
			[][2]string{{"Last active", "2026-12-06 11:55 UTC (5 min ago)"}, {"Awake because", "you used it recently"},
				{"Suspends", "around 2026-12-06 12:25 UTC (25 min from now) unless it is used; each use moves this later"}}},
		{"leader, never reported", fakeIdle{sweeper.Suspension{IdleTimeout: timeout, Exact: true,
			Decision: sweeper.Decision{At: now.Add(10 * time.Minute), Reason: sweeper.ReasonGrace}}},
			[][2]string{{"Suspends", "around 2026-12-06 12:10 UTC (10 min from now) unless it is used; each use moves this later"}}},
		{"leader, due", fakeIdle{sweeper.Suspension{IdleTimeout: timeout, Exact: true,
			Decision: sweeper.Decision{Suspend: true, At: now.Add(-time.Second), Reason: sweeper.ReasonIdle}}},
			[][2]string{{"Suspends", "within moments: it has not been used for 30 min"}}},
		{"leader, connected", fakeIdle{sweeper.Suspension{IdleTimeout: time.Hour, LastActive: now, Exact: true,
			Decision: sweeper.Decision{Reason: sweeper.ReasonRequest}}},
			[][2]string{{"Last active", "2026-12-06 12:00 UTC (less than a minute ago)"}, {"Awake because", "you are connected"},
				{"Suspends", "not while you are connected; then after 1 h without use"}}},
		{"leader, calling the model", fakeIdle{sweeper.Suspension{IdleTimeout: time.Hour, LastActive: now, Exact: true,
			Decision: sweeper.Decision{Reason: sweeper.ReasonModelCall}}},
			[][2]string{{"Last active", "2026-12-06 12:00 UTC (less than a minute ago)"}, {"Awake because", "your agent is calling the model"},
				{"Suspends", "not while it is calling the model; then after 1 h without use"}}},
		{"leader, called the model", fakeIdle{sweeper.Suspension{IdleTimeout: timeout, LastActive: now.Add(-2 * time.Minute), Exact: true,
			Decision: sweeper.Decision{At: now.Add(28 * time.Minute), Reason: sweeper.ReasonModel}}},
			[][2]string{{"Last active", "2026-12-06 11:58 UTC (2 min ago)"}, {"Awake because", "your agent called the model recently"},
				{"Suspends", "around 2026-12-06 12:28 UTC (28 min from now) unless it is used or calls the model again"}}},
		{"leader, busy", fakeIdle{sweeper.Suspension{IdleTimeout: timeout, Exact: true, BusyUntil: now.Add(20 * time.Minute), AllowanceLeft: 2 * time.Hour,
			Decision: sweeper.Decision{At: now.Add(20 * time.Minute), Reason: sweeper.ReasonBusy, UsesAllowance: true}}},
			[][2]string{{"Awake because", "your agent said it is busy until 2026-12-06 12:20 UTC (20 min from now)"},
				{"Suspends", "around 2026-12-06 12:20 UTC (20 min from now) at the latest: busy time is limited to 2 h more today"}}},
		{"leader, busy but used recently", fakeIdle{sweeper.Suspension{IdleTimeout: timeout, LastActive: now, Exact: true, BusyUntil: now.Add(time.Hour),
			Decision: sweeper.Decision{At: now.Add(timeout), Reason: sweeper.ReasonActivity}}},
			[][2]string{{"Last active", "2026-12-06 12:00 UTC (less than a minute ago)"}, {"Busy", "your agent said it is busy until 2026-12-06 13:00 UTC (1 h from now)"},
				{"Awake because", "you used it recently"}, {"Suspends", "around 2026-12-06 12:30 UTC (30 min from now) unless it is used; each use moves this later"}}},
		{"leader, kept awake", fakeIdle{sweeper.Suspension{IdleTimeout: timeout, Exact: true,
			Decision: sweeper.Decision{At: now.Add(45 * time.Minute), Reason: sweeper.ReasonKeepAwake}}},
			[][2]string{{"Awake because", "you asked to keep it awake"}, {"Suspends", "around 2026-12-06 12:45 UTC (45 min from now), when your keep-awake ends, unless it is used"}}},
		{"leader, allowance used", fakeIdle{sweeper.Suspension{IdleTimeout: timeout, Exact: true,
			Decision: sweeper.Decision{Suspend: true, At: now.Add(-time.Minute), Reason: sweeper.ReasonAllowanceUsed}}},
			[][2]string{{"Suspends", "within moments: your agent says it is busy, but today's busy time is used up"}}},
		{"another replica", fakeIdle{sweeper.Suspension{IdleTimeout: timeout, Decision: sweeper.Decision{At: now.Add(20 * time.Minute)}}},
			[][2]string{{"Suspends", "after 30 min without use, not before 2026-12-06 12:20 UTC (20 min from now); only the replica of this service that runs the idle sweep knows its last use, and it did not answer this page's replica"}}},
		{"another replica, past the earliest", fakeIdle{sweeper.Suspension{IdleTimeout: 45 * time.Second, Decision: sweeper.Decision{At: now.Add(-time.Hour)}}},
			[][2]string{{"Suspends", "after 45 s without use; only the replica of this service that runs the idle sweep knows its last use, and it did not answer this page's replica"}}},
		{"no sweeper", nil, [][2]string{{"Suspends", "never: idle suspend is not running on this service"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{opts: Options{Activity: tc.activity}}
			got := s.suspendFacts(t.Context(), nil, &agents.Sandbox{}, now)
			if len(got) != len(tc.want) {
				t.Fatalf("facts %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("fact %d: %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestRunningSince: an agent runs for its user from the later of the
// signup (claim creation) and its last Ready transition.
func TestRunningSince(t *testing.T) {
	at := func(h int) metav1.Time { return metav1.NewTime(time.Date(2026, 12, 6, h, 0, 0, 0, time.UTC)) }
	for _, tc := range []struct {
		name           string
		created, ready metav1.Time
		want           metav1.Time
	}{
		{"warm pod adopted at signup", at(10), at(8), at(10)},
		{"woken after signup", at(10), at(12), at(12)},
		{"no Ready condition", at(10), metav1.Time{}, at(10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &extensions.SandboxClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: tc.created}}
			sb := &agents.Sandbox{}
			if !tc.ready.IsZero() {
				sb.Status.Conditions = []metav1.Condition{{Type: agents.ConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: tc.ready}}
			}
			if got := runningSince(c, sb); !got.Equal(tc.want.Time) {
				t.Errorf("runningSince = %v, want %v", got, tc.want)
			}
		})
	}
}
