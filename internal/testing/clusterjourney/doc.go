// Package clusterjourney holds the end-to-end journey on a real local
// cluster: `make e2e-cluster` builds the binaries and images, and the test
// runs `sandgate-cluster up` (the command `make cluster` runs), walks a user
// through every entry over TLS, and checks that the cluster's removal
// leaves nothing behind. It skips unless SANDGATE_CLUSTER_JOURNEY=1.
package clusterjourney
