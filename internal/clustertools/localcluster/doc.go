// Package localcluster brings up a real Kubernetes cluster on this one
// machine without Docker: the control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) as host processes, and N nodes,
// each in its own network and mount namespace, each running containerd,
// runc, the CNI bridge, host-local and portmap plugins, a kubelet and
// kube-proxy. Cluster DNS is CoreDNS, storage is local-path-provisioner.
//
// Every address the cluster uses lives on a host bridge and inside the
// nodes' namespaces; an nftables table drops anything from or to those
// ranges that would leave through another interface. Down removes every
// process, namespace, mount, link, rule and directory a cluster made, also
// after a run that was killed, and Leftovers says what is still there.
package localcluster
