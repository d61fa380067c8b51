// Package informer keeps the node proxy's read-only view of the cluster: for
// each user, the account from the managed SandboxClaim and the route to the
// user's sandbox pod.
//
// It runs four informers and never calls the API server on a lookup: managed
// claims (label selector), Sandboxes, the pods of this node only (field
// selector on spec.nodeName) and Nodes (name to InternalIP). Each informer
// stores a compact entry instead of the object (see entries.go), so the cache
// of 100k users stays small. Lookup resolves user -> claim -> Sandbox -> pod
// or node; change callbacks tell the proxy when a pod's upstream cookies must
// be forgotten, and WaitReady holds a caller until a sandbox becomes routable.
package informer
