// Package drain lets a pod's preStop hook take the process out of its
// Service before SIGTERM: POST /drain on the ops listener makes /readyz
// fail at once while every listener keeps serving, and answers once the
// drain delay has passed, so the hook holds SIGTERM back until load
// balancers and kube-proxy have stopped sending new requests.
//
// Only a peer in the process's own network namespace may start a drain:
// the ops port is open to other pods for metrics scraping, and a drain
// started by anyone else would take the pod out of service. The preStop
// hook is therefore an exec of the binary itself ("nodeproxy drain",
// "authapi drain"), which connects to the ops port over loopback; see
// docs/api.md.
package drain
