package sweeper

import (
	"testing"
	"time"
)

// TestDecide is the idle rule's table: every input, alone and where two
// meet.
func TestDecide(t *testing.T) {
	base := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return base.Add(time.Duration(min) * time.Minute) }
	const timeout = 10 * time.Minute
	now := at(60)
	for _, tc := range []struct {
		name string
		in   Inputs
		want Decision
	}{
		{"browser activity latest", Inputs{State: State{LastActivity: at(55)}, FirstSeen: at(10), ReadySince: at(5)},
			Decision{At: at(65), Reason: ReasonActivity}},
		{"idle: suspend", Inputs{State: State{LastActivity: at(45)}, FirstSeen: at(10)},
			Decision{Suspend: true, At: at(55), Reason: ReasonIdle}},
		{"a model call latest", Inputs{State: State{LastActivity: at(58), LastModelCall: at(58)}, FirstSeen: at(10)},
			Decision{At: at(68), Reason: ReasonModel}},
		{"browser after the model call", Inputs{State: State{LastActivity: at(58), LastModelCall: at(50)}, FirstSeen: at(10)},
			Decision{At: at(68), Reason: ReasonActivity}},
		{"woken: Ready latest", Inputs{State: State{LastActivity: at(40)}, FirstSeen: at(10), ReadySince: at(55)},
			Decision{At: at(65), Reason: ReasonWoken}},
		{"new leader's grace", Inputs{State: State{LastActivity: at(1)}, FirstSeen: at(52), ReadySince: at(0)},
			Decision{At: at(62), Reason: ReasonGrace}},
		{"no report yet", Inputs{FirstSeen: at(53)}, Decision{At: at(63), Reason: ReasonGrace}},
		{"request in flight", Inputs{State: State{LastActivity: at(1), InFlight: 1}, FirstSeen: at(1)},
			Decision{Reason: ReasonRequest}},
		{"model call in flight", Inputs{State: State{LastActivity: at(1), InFlight: 1, ModelCalls: 1}, FirstSeen: at(1)},
			Decision{Reason: ReasonModelCall}},
		{"a request beside a model call", Inputs{State: State{InFlight: 2, ModelCalls: 1}, FirstSeen: at(1)},
			Decision{Reason: ReasonRequest}},
		{"WebSocket, not counted", Inputs{State: State{LastActivity: at(2), WebSockets: 1}, FirstSeen: at(1)},
			Decision{Suspend: true, At: at(12), Reason: ReasonIdle}},
		{"WebSocket, counted", Inputs{State: State{LastActivity: at(2), WebSockets: 1}, FirstSeen: at(1), CountWebSockets: true},
			Decision{Reason: ReasonWebSocket}},
		{"owner's keep-awake", Inputs{State: State{LastActivity: at(30)}, FirstSeen: at(1), KeepAwakeUntil: at(70)},
			Decision{At: at(70), Reason: ReasonKeepAwake}},
		{"keep-awake over", Inputs{State: State{LastActivity: at(30)}, FirstSeen: at(1), KeepAwakeUntil: at(50)},
			Decision{Suspend: true, At: at(50), Reason: ReasonIdle}},
		{"keep-awake earlier than activity's deadline", Inputs{State: State{LastActivity: at(58)}, FirstSeen: at(1), KeepAwakeUntil: at(62)},
			Decision{At: at(68), Reason: ReasonActivity}},
		{"busy past the deadline", Inputs{State: State{LastActivity: at(30), BusyUntil: at(90)}, FirstSeen: at(1), AllowanceLeft: time.Hour},
			Decision{At: at(90), Reason: ReasonBusy, UsesAllowance: true}},
		{"busy, the allowance ends first", Inputs{State: State{LastActivity: at(30), BusyUntil: at(90)}, FirstSeen: at(1), AllowanceLeft: 5 * time.Minute},
			Decision{At: at(65), Reason: ReasonBusy, UsesAllowance: true}},
		{"busy, allowance spent", Inputs{State: State{LastActivity: at(30), BusyUntil: at(90)}, FirstSeen: at(1)},
			Decision{Suspend: true, At: at(40), Reason: ReasonAllowanceUsed}},
		{"busy within the deadline: no allowance used", Inputs{State: State{LastActivity: at(55), BusyUntil: at(90)}, FirstSeen: at(1), AllowanceLeft: time.Hour},
			Decision{At: at(65), Reason: ReasonActivity}},
		{"busy declaration over", Inputs{State: State{LastActivity: at(30), BusyUntil: at(59)}, FirstSeen: at(1), AllowanceLeft: time.Hour},
			Decision{Suspend: true, At: at(40), Reason: ReasonIdle}},
		{"open work beats an allowance spent", Inputs{State: State{InFlight: 1, ModelCalls: 1, BusyUntil: at(90)}, FirstSeen: at(1)},
			Decision{Reason: ReasonModelCall}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now, tc.in.IdleTimeout = now, timeout
			if got := Decide(tc.in); got != tc.want {
				t.Errorf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}
