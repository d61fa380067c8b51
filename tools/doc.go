// Package tools holds no code: each folder below it is a Go module that
// builds one third-party part from the Go module proxy (kube-apiserver and
// the node binaries, etcd, containerd, CoreDNS, the NetworkPolicy enforcers,
// local-path-provisioner, promtool, Helm, oauth2-proxy, controller-gen),
// apart from the main module so that it never imports them. Its test keeps
// the dependency versions the modules share equal and their build flags the
// same, so the build cache compiles each shared package once.
package tools
