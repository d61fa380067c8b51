// Package activity is the node proxy's side of idle suspend: a Tracker that
// records, per sandbox, when it last carried traffic and how much work is
// open on it, and a Reporter that posts that table to the auth API every
// report interval. The auth API's leader aggregates the tables of all nodes
// and decides what to suspend (internal/accountpath/sweeper); this package decides
// nothing.
//
// What counts as traffic: the start and end of an HTTP request, request and
// response body bytes, WebSocket data frames in either direction, and the
// upgrade and close of a WebSocket. Pings and pongs do not count. The
// egress listener adds the agent's own work: each model call it admits is
// a request in flight on the calling sandbox until its last byte (counted
// apart as model_calls too, with last_model_call), so an agent at work with
// no browser attached is not idle. An agent's busy declaration (busy_until)
// is reported as it stands but is not traffic: the leader decides how long
// it may keep a sandbox awake (docs/idle.md).
//
// Open work is reported in two separate numbers so the leader can apply
// IDLE_COUNTS_OPEN_CONNECTIONS without the nodes knowing it:
//
//   - in_flight counts HTTP requests between Begin and End, including SSE
//     streams and requests held while their sandbox wakes. The leader never
//     suspends a sandbox with in-flight requests on any live node.
//   - open_websockets counts WebSockets between Upgrade and EndWebSocket. By
//     default an open WebSocket that carries no data frames does not keep its
//     sandbox awake (only its traffic does); the leader counts open
//     WebSockets as work only when IDLE_COUNTS_OPEN_CONNECTIONS=true.
package activity
