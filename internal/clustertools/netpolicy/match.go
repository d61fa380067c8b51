package netpolicy

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// matches reports whether ep is this peer of a policy in namespace
// policyNS; nsLabels gives a namespace's labels.
func (p peer) matches(policyNS string, ep Endpoint, nsLabels func(string) map[string]string) bool {
	if p.block != nil {
		return ep.IP.IsValid() && p.block.contains(ep.IP.Unmap())
	}
	if ep.Pod == nil {
		return false
	}
	if p.namespaces == nil {
		if ep.Pod.Namespace != policyNS {
			return false
		}
	} else if !p.namespaces.Matches(labelSet(nsLabels(ep.Pod.Namespace))) {
		return false
	}
	return p.pods == nil || p.pods.Matches(labelSet(ep.Pod.Labels))
}

func (b *ipBlock) contains(ip netip.Addr) bool {
	if !b.cidr.Contains(ip) {
		return false
	}
	for _, e := range b.except {
		if e.Contains(ip) {
			return false
		}
	}
	return true
}

// matchesPort reports whether the connection's destination port and
// protocol is one of r's ports; a rule without ports admits every port.
func (r rule) matchesPort(c Connection) bool {
	if len(r.ports) == 0 {
		return true
	}
	for _, p := range r.ports {
		if p.protocol == c.Protocol && p.matches(c) {
			return true
		}
	}
	return false
}

// matches reports whether p names c's destination port; a named port is
// looked up among the destination pod's container ports, in either
// direction, so it never matches an address outside the pod network.
func (p port) matches(c Connection) bool {
	switch {
	case p.all:
		return true
	case p.name == "":
		return p.first <= c.Port && c.Port <= p.last
	case c.To.Pod == nil:
		return false
	}
	for _, cp := range c.To.Pod.Ports {
		proto := cp.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		if cp.Name == p.name && proto == c.Protocol && cp.ContainerPort == c.Port {
			return true
		}
	}
	return false
}

func labelSet(m map[string]string) labels.Set { return labels.Set(m) }
