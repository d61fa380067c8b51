package netpolicy

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// direction indexes a policy's per-direction fields.
type direction int

const (
	ingress direction = iota
	egress
)

// policy is a NetworkPolicy with its selectors, CIDRs and ports parsed.
type policy struct {
	name, namespace string
	selector        labels.Selector
	types           [2]bool
	rules           [2][]rule
}

// rule is one ingress or egress rule: no peers admits every peer, no
// ports every port.
type rule struct {
	peers []peer
	ports []port
}

// peer is one entry of a rule's from or to list: an ipBlock, or pod and
// namespace selectors (nil pods: every pod; nil namespaces: the policy's
// own namespace).
type peer struct {
	block            *ipBlock
	pods, namespaces labels.Selector
}

type ipBlock struct {
	cidr   netip.Prefix
	except []netip.Prefix
}

// port is one NetworkPolicyPort: every port of the protocol (all), a
// range first..last, or a container port name.
type port struct {
	protocol    corev1.Protocol
	all         bool
	first, last int32
	name        string
}

// compile parses np, or explains what the API server would reject in it
// or what cannot be evaluated.
func compile(np *networkingv1.NetworkPolicy) (policy, error) {
	p := policy{name: np.Namespace + "/" + np.Name, namespace: np.Namespace}
	if np.Namespace == "" {
		return p, fmt.Errorf("NetworkPolicy %s has no namespace", np.Name)
	}
	var err error
	if p.selector, err = selector(&np.Spec.PodSelector); err != nil {
		return p, fmt.Errorf("%s: podSelector: %w", p.name, err)
	}
	if p.types, err = policyTypes(&np.Spec); err != nil {
		return p, fmt.Errorf("%s: %w", p.name, err)
	}
	for i, r := range np.Spec.Ingress {
		c, err := compileRule(r.From, r.Ports)
		if err != nil {
			return p, fmt.Errorf("%s: ingress rule %d: %w", p.name, i, err)
		}
		p.rules[ingress] = append(p.rules[ingress], c)
	}
	for i, r := range np.Spec.Egress {
		c, err := compileRule(r.To, r.Ports)
		if err != nil {
			return p, fmt.Errorf("%s: egress rule %d: %w", p.name, i, err)
		}
		p.rules[egress] = append(p.rules[egress], c)
	}
	return p, nil
}

// policyTypes defaults the policy types as the API server does: Ingress
// always, Egress when the policy has egress rules.
func policyTypes(spec *networkingv1.NetworkPolicySpec) ([2]bool, error) {
	var t [2]bool
	if len(spec.PolicyTypes) == 0 {
		t[ingress], t[egress] = true, len(spec.Egress) > 0
		return t, nil
	}
	for _, pt := range spec.PolicyTypes {
		switch pt {
		case networkingv1.PolicyTypeIngress:
			t[ingress] = true
		case networkingv1.PolicyTypeEgress:
			t[egress] = true
		default:
			return t, fmt.Errorf("unknown policy type %q", pt)
		}
	}
	return t, nil
}

func compileRule(peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort) (rule, error) {
	var r rule
	for i := range peers {
		p, err := compilePeer(&peers[i])
		if err != nil {
			return r, fmt.Errorf("peer %d: %w", i, err)
		}
		r.peers = append(r.peers, p)
	}
	for i := range ports {
		p, err := compilePort(&ports[i])
		if err != nil {
			return r, fmt.Errorf("port %d: %w", i, err)
		}
		r.ports = append(r.ports, p)
	}
	return r, nil
}

func compilePeer(np *networkingv1.NetworkPolicyPeer) (peer, error) {
	var p peer
	selects := np.PodSelector != nil || np.NamespaceSelector != nil
	switch {
	case np.IPBlock != nil && selects:
		return p, fmt.Errorf("ipBlock beside a selector")
	case np.IPBlock != nil:
		b, err := compileBlock(np.IPBlock)
		p.block = &b
		return p, err
	case !selects:
		return p, fmt.Errorf("neither a selector nor an ipBlock")
	}
	var err error
	if np.PodSelector != nil {
		if p.pods, err = selector(np.PodSelector); err != nil {
			return p, fmt.Errorf("podSelector: %w", err)
		}
	}
	if np.NamespaceSelector != nil {
		if p.namespaces, err = selector(np.NamespaceSelector); err != nil {
			return p, fmt.Errorf("namespaceSelector: %w", err)
		}
	}
	return p, nil
}

func compileBlock(b *networkingv1.IPBlock) (ipBlock, error) {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return ipBlock{}, fmt.Errorf("ipBlock cidr: %w", err)
	}
	out := ipBlock{cidr: cidr.Masked()}
	for _, e := range b.Except {
		ex, err := netip.ParsePrefix(e)
		if err != nil {
			return out, fmt.Errorf("ipBlock except: %w", err)
		}
		if ex.Addr().Is4() != out.cidr.Addr().Is4() || ex.Bits() <= out.cidr.Bits() || !out.cidr.Contains(ex.Addr()) {
			return out, fmt.Errorf("ipBlock except %s is not a strict subset of %s", e, b.CIDR)
		}
		out.except = append(out.except, ex.Masked())
	}
	return out, nil
}

func compilePort(np *networkingv1.NetworkPolicyPort) (port, error) {
	p := port{protocol: corev1.ProtocolTCP}
	if np.Protocol != nil {
		p.protocol = *np.Protocol
	}
	switch p.protocol {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
	default:
		return p, fmt.Errorf("unknown protocol %q", p.protocol)
	}
	switch {
	case np.Port == nil && np.EndPort != nil:
		return p, fmt.Errorf("endPort without port")
	case np.Port == nil:
		p.all = true
	case np.Port.Type == intstr.String && np.EndPort != nil:
		return p, fmt.Errorf("endPort with the named port %q", np.Port.StrVal)
	case np.Port.Type == intstr.String:
		if np.Port.StrVal == "" {
			return p, fmt.Errorf("empty port name")
		}
		p.name = np.Port.StrVal
	default:
		p.first, p.last = np.Port.IntVal, np.Port.IntVal
		if np.EndPort != nil {
			p.last = *np.EndPort
		}
		if p.first < 1 || p.last > 65535 || p.last < p.first {
			return p, fmt.Errorf("port range %d-%d outside 1-65535 or reversed", p.first, p.last)
		}
	}
	return p, nil
}

func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, fmt.Errorf("parse label selector: %w", err)
	}
	return sel, nil
}
