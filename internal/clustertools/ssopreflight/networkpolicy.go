package ssopreflight

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// networkPolicy checks that NetworkPolicies select the node proxies for
// ingress and admit to their proxy port only oauth2-proxy and other node
// proxies (and AllowedCIDRs): NetworkPolicies add up, so one rule that
// admits more opens the boundary.
func (s *state) networkPolicy(ctx context.Context) []string {
	if len(s.nodeProxies) == 0 {
		return []string{fmt.Sprintf("no DaemonSet, Deployment or pod in %s is labelled %s: cannot find the node proxies", s.o.NodeNamespace, labels.Set(s.o.NodeProxyLabels))}
	}
	if len(s.oauth2Proxies) == 0 {
		return []string{fmt.Sprintf("no Deployment or pod in %s is labelled %s: cannot find oauth2-proxy", s.o.ProxyNamespace, labels.Set(s.o.OAuth2ProxyLabels))}
	}
	list, err := s.o.Kube.NetworkingV1().NetworkPolicies(s.o.NodeNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{fmt.Sprintf("list NetworkPolicies in %s: %v", s.o.NodeNamespace, err)}
	}
	var reasons []string
	selecting, admitsProxy := 0, false
	for _, np := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("NetworkPolicy %s/%s: pod selector: %v", np.Namespace, np.Name, err))
			continue
		}
		if !anyMatches(sel, s.nodeProxies) || !governsIngress(&np) {
			continue
		}
		selecting++
		for i, rule := range np.Spec.Ingress {
			if !coversPort(rule.Ports, s.o.ProxyPort) {
				continue
			}
			where := fmt.Sprintf("NetworkPolicy %s/%s ingress rule %d", np.Namespace, np.Name, i)
			if len(rule.From) == 0 {
				reasons = append(reasons, fmt.Sprintf("%s admits every source to port %d", where, s.o.ProxyPort))
				continue
			}
			for _, peer := range rule.From {
				r, proxy := s.checkPeer(np.Namespace, peer)
				admitsProxy = admitsProxy || proxy
				if r != "" {
					reasons = append(reasons, where+" "+r)
				}
			}
		}
	}
	if selecting == 0 {
		return append(reasons, fmt.Sprintf("no NetworkPolicy in %s selects the node proxies (%s) for ingress: any pod can reach them and assert any user", s.o.NodeNamespace, labels.Set(s.o.NodeProxyLabels)))
	}
	if !admitsProxy {
		reasons = append(reasons, fmt.Sprintf("no NetworkPolicy admits oauth2-proxy (%s in %s) to the node proxies' port %d: the SSO variant cannot work", labels.Set(s.o.OAuth2ProxyLabels), s.o.ProxyNamespace, s.o.ProxyPort))
	}
	return reasons
}

// checkPeer says what is wrong with peer admitting traffic to the node
// proxies of a policy in policyNS ("" when nothing), and whether it admits
// oauth2-proxy.
func (s *state) checkPeer(policyNS string, peer networkingv1.NetworkPolicyPeer) (string, bool) {
	if peer.IPBlock != nil {
		p, err := netip.ParsePrefix(peer.IPBlock.CIDR)
		if err != nil || !s.allowedCIDR(p) {
			return fmt.Sprintf("admits ipBlock %s, which is not in the allowed CIDRs %v", peer.IPBlock.CIDR, s.o.AllowedCIDRs), false
		}
		return "", false
	}
	namespaces := []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: policyNS}}}
	if peer.NamespaceSelector != nil {
		nsSel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
		if err != nil {
			return fmt.Sprintf("namespace selector: %v", err), false
		}
		if nsSel.Empty() {
			return "admits pods of every namespace", false
		}
		namespaces = nil
		for _, ns := range s.namespaces {
			if nsSel.Matches(labels.Set(ns.Labels)) {
				namespaces = append(namespaces, ns)
			}
		}
	}
	if peer.PodSelector == nil || (len(peer.PodSelector.MatchLabels) == 0 && len(peer.PodSelector.MatchExpressions) == 0) {
		return fmt.Sprintf("admits every pod in %s", names(namespaces)), slices.ContainsFunc(namespaces, func(ns corev1.Namespace) bool { return ns.Name == s.o.ProxyNamespace })
	}
	podSel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
	if err != nil {
		return fmt.Sprintf("pod selector: %v", err), false
	}
	admitsProxy := false
	for _, ns := range namespaces {
		switch {
		case ns.Name == s.o.ProxyNamespace && anyMatches(podSel, s.oauth2Proxies):
			admitsProxy = true
		case ns.Name == s.o.NodeNamespace && anyMatches(podSel, s.nodeProxies):
		default:
			return fmt.Sprintf("admits pods %s in %s, which are neither oauth2-proxy nor node proxies", podSel, ns.Name), admitsProxy
		}
		for _, p := range s.pods {
			if p.Namespace == ns.Name && podSel.Matches(labels.Set(p.Labels)) && !s.isProxy(p) {
				return fmt.Sprintf("admits pod %s/%s, which is neither oauth2-proxy nor a node proxy", p.Namespace, p.Name), admitsProxy
			}
		}
	}
	return "", admitsProxy
}

// isProxy reports whether p is oauth2-proxy or a node proxy.
func (s *state) isProxy(p corev1.Pod) bool {
	l := labels.Set(p.Labels)
	return (p.Namespace == s.o.ProxyNamespace && labels.SelectorFromSet(s.o.OAuth2ProxyLabels).Matches(l)) ||
		(p.Namespace == s.o.NodeNamespace && labels.SelectorFromSet(s.o.NodeProxyLabels).Matches(l))
}

func (s *state) allowedCIDR(p netip.Prefix) bool {
	for _, a := range s.o.AllowedCIDRs {
		if a.Bits() <= p.Bits() && a.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// governsIngress reports whether np restricts ingress (policyTypes names
// Ingress, or is empty, which implies it).
func governsIngress(np *networkingv1.NetworkPolicy) bool {
	return len(np.Spec.PolicyTypes) == 0 || slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
}

// coversPort reports whether a rule's ports include port (no ports: all;
// a named port counts, as the node proxies name theirs).
func coversPort(ports []networkingv1.NetworkPolicyPort, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.StrVal != "":
			return true
		case p.EndPort != nil:
			if p.Port.IntVal <= port && port <= *p.EndPort {
				return true
			}
		case p.Port.IntVal == port:
			return true
		}
	}
	return false
}

func anyMatches(sel labels.Selector, shapes []podShape) bool {
	for _, sh := range shapes {
		if sel.Matches(sh.labels) {
			return true
		}
	}
	return false
}

func names(nss []corev1.Namespace) string {
	if len(nss) == 0 {
		return "no namespace"
	}
	var out []string
	for _, ns := range nss {
		out = append(out, ns.Name)
	}
	return "namespace " + strings.Join(out, ", ")
}
