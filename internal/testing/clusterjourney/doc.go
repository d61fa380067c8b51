// Package clusterjourney holds the end-to-end journey on a real local
// cluster: `make e2e-cluster` builds the binaries and images, and the test
// runs `sandgate-cluster up` (the command `make cluster` runs), walks a user
// through every entry over TLS, and checks that the cluster's removal
// leaves nothing behind. It skips unless SANDGATE_CLUSTER_JOURNEY=1.
//
// The journey runs both agent-sandbox releases the stand-in models on one
// cluster: it starts as v1.0.13; midway it ends the controller stand-in for
// a minute through up's control socket (--control-socket) while users sign
// up, a suspended agent is woken and a running one is used, checks what
// each sees and that everything is Ready once the controller is back, then
// restarts the stand-in as v0.5.6 for the rest of the run, the Helm part
// (a user served, suspended and woken) included. Each part checks the
// release by the pod-name annotation only v0.5.6 writes. (Upstream does not
// support going back from v1.0 to v0.5; the stand-in's releases differ only
// in what its reconciles write, so the switch is sound here.)
package clusterjourney
