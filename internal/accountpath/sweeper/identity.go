package sweeper

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ErrBadIdentity means a lease identity is not "<pod-name>_<host:port>".
var ErrBadIdentity = errors.New("lease identity is not <pod-name>_<host:port>")

// Identity returns the lease identity of the replica running in pod and
// taking reports at addr (host:port, e.g. the pod IP and the internal
// port). Pod names never contain "_", so the first one separates the parts.
func Identity(pod, addr string) string { return pod + "_" + addr }

// ParseIdentity splits a lease identity made by Identity.
func ParseIdentity(id string) (pod, addr string, err error) {
	pod, addr, ok := strings.Cut(id, "_")
	if !ok || len(validation.IsDNS1123Subdomain(pod)) > 0 {
		return "", "", fmt.Errorf("%w: %q", ErrBadIdentity, id)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		return "", "", fmt.Errorf("%w: %q", ErrBadIdentity, id)
	}
	return pod, addr, nil
}
