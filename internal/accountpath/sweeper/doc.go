// Package sweeper is the auth API's side of idle suspend. Every replica
// runs a Sweeper; exactly one, elected on a Lease, aggregates the node
// proxies' activity reports (internal/activity) and patches idle, managed
// Sandboxes to Suspended.
//
// # Rules
//
// The leader keeps, per sandbox, the newest activity over all nodes and the
// sum of the in-flight counts of each node's latest report; a node silent
// for 3 report intervals counts as 0 (Aggregator). Every sweep interval it
// lists Sandboxes from its informer and suspends one when all of these hold:
//
//   - spec.operatingMode is Running (or unset) and it is not being deleted;
//   - it is owned by a managed claim (account.Managed): every claim that
//     points at it, through the claim-uid label or the claim's
//     status.sandbox.name, is managed and not being deleted, and at least
//     one does. Warm-pool spares and hand-made claims are never touched;
//   - no live node reports a request in flight on it, nor, with
//     CountOpenConnections (IDLE_COUNTS_OPEN_CONNECTIONS=true), an open
//     WebSocket;
//   - IdleTimeout has passed since the latest of: its newest reported
//     activity, the moment this leadership term first saw it Running under a
//     managed claim, and its Ready condition's last transition.
//
// The second point of the last rule gives a new leader its grace: during
// its first IdleTimeout it suspends nothing at all, not even a sandbox some
// nodes already reported idle, because the nodes that have not reported yet
// may have requests in flight on it. It also restarts the clock of a
// sandbox that was woken, or just adopted from the warm pool.
//
// The patch is a JSON merge patch of spec.operatingMode carrying the
// resourceVersion the decision was made on, so it fails with a conflict
// instead of suspending a sandbox that changed meanwhile (a wake, say) and a
// sandbox is never suspended twice from one observation, even by two
// leaders.
//
// # Leadership
//
// Leader election uses client-go's leaderelection on a Lease with
// ReleaseOnCancel. A leader stops sweeping before anyone else can start:
// its sweep loop is stopped, and waited for, before the lease is released
// and when leadership ends; and each patch is sent only while the last
// successful renewal is less than RenewDeadline old (shorter than
// LeaseDuration, after which another replica may take over), with that
// moment as the patch's deadline.
//
// # Forwarding
//
// A replica's lease identity is "<pod-name>_<host:port>" (Identity): the
// lease holder's identity thus says where the leader takes reports, with no
// extra API call or annotation race. A report that reaches a non-leader
// (Observe returns ErrNotLeader) is passed on by the HTTP layer to
// Leader().Addr, once; a replica that receives a forwarded report and does
// not lead answers 503, and the node proxy retries.
//
// # Inventory
//
// Every replica, leading or not, counts its caches at each scrape:
// sandgate_sweeper_users (managed claims not being deleted) and
// sandgate_sweeper_sandboxes by state (ready, starting, suspended, failed,
// deleting, unmanaged). Dashboards take the max over replicas.
package sweeper
