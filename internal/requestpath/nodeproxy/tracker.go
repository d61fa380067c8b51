package nodeproxy

import "github.com/sandgate/sandgate/internal/activity"

// tracker counts requests against their sandbox in the activity table the
// node reports for idle suspend: from the first stage that knows the
// sandbox (begin) through every body chunk and WebSocket data frame
// (traffic) to the end (end). Without an activity table it counts nothing.
type tracker struct {
	table     *activity.Tracker
	namespace string
}

// begin counts x against its sandbox until end, from the first call that
// knows the sandbox: the handler calls it before the wake stage, so a
// request held while its sandbox wakes counts, and again after, so one
// that came before adoption (no sandbox yet) counts from there on. Later
// calls leave it counted once, against the first.
func (t tracker) begin(x *exchange, sandbox string) {
	if t.table == nil || sandbox == "" || x.tracked {
		return
	}
	x.act = activity.Key{Namespace: t.namespace, Name: sandbox}
	x.tracked = true
	t.table.Begin(x.act)
}

// traffic records body bytes or a WebSocket data frame of a tracked
// request.
func (t tracker) traffic(x *exchange) {
	if x.tracked {
		t.table.Traffic(x.act)
	}
}

// upgrade counts a tracked request as the open WebSocket it became.
func (t tracker) upgrade(x *exchange) {
	if x.tracked {
		x.upgraded = true
		t.table.Upgrade(x.act)
	}
}

// end stops counting x.
func (t tracker) end(x *exchange) {
	switch {
	case !x.tracked:
	case x.upgraded:
		t.table.EndWebSocket(x.act)
	default:
		t.table.End(x.act)
	}
}
