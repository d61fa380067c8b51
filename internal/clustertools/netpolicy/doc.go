// Package netpolicy decides whether Kubernetes NetworkPolicies
// (networking.k8s.io/v1) admit a connection, and holds sandgate's traffic
// matrix: the flows each exposure variant needs open or shut.
//
// The evaluator follows the v1 API's rules: a pod is isolated for a
// direction only when a policy that selects it has that policy type; a
// connection needs the egress of its source and the ingress of its
// destination; peers match by pod and namespace selectors (matchLabels and
// matchExpressions) or by ipBlock with its exceptions; ports by number,
// range (endPort) or name, a name resolved against the destination pod's
// container ports. What implementations add on their own is not modelled:
// the pod's own node always being admitted, host-network pods (give them
// as addresses), and Service address translation (give the endpoints).
package netpolicy
