package ssopreflight

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// exposure checks that nothing but the cluster network leads to the node
// proxies: no NodePort, LoadBalancer or external IP Service selects them,
// no Ingress routes to a Service that does, and they are not on the host
// network, where NetworkPolicies do not apply.
func (s *state) exposure(ctx context.Context) []string {
	var reasons []string
	for _, sh := range s.nodeProxies {
		if sh.spec.HostNetwork {
			reasons = append(reasons, fmt.Sprintf("%s runs on the host network, where NetworkPolicies do not apply: anyone who reaches a node can assert any user", sh.what))
		}
	}
	svcs, err := s.o.Kube.CoreV1().Services(s.o.NodeNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return append(reasons, fmt.Sprintf("list Services in %s: %v", s.o.NodeNamespace, err))
	}
	toProxies := map[string]bool{} // Services in NodeNamespace that reach the node proxies
	for _, svc := range svcs.Items {
		if !s.reachesNodeProxies(ctx, &svc) {
			continue
		}
		toProxies[svc.Name] = true
		switch {
		case svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer:
			reasons = append(reasons, fmt.Sprintf("Service %s/%s is type %s: a path to the node proxies that skips oauth2-proxy", svc.Namespace, svc.Name, svc.Spec.Type))
		case len(svc.Spec.ExternalIPs) > 0:
			reasons = append(reasons, fmt.Sprintf("Service %s/%s has external IPs %v: a path to the node proxies that skips oauth2-proxy", svc.Namespace, svc.Name, svc.Spec.ExternalIPs))
		}
	}
	ings, err := s.o.Kube.NetworkingV1().Ingresses(s.o.NodeNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return append(reasons, fmt.Sprintf("list Ingresses in %s: %v", s.o.NodeNamespace, err))
	}
	for _, ing := range ings.Items {
		for _, svc := range ingressServices(&ing) {
			if toProxies[svc] {
				reasons = append(reasons, fmt.Sprintf("Ingress %s/%s routes to the node proxies through Service %s, skipping oauth2-proxy", ing.Namespace, ing.Name, svc))
			}
		}
	}
	return reasons
}

// reachesNodeProxies reports whether svc selects node proxy pods, or has
// hand-made endpoints at a node proxy pod's address.
func (s *state) reachesNodeProxies(ctx context.Context, svc *corev1.Service) bool {
	if len(svc.Spec.Selector) > 0 {
		return anyMatches(labels.SelectorFromSet(svc.Spec.Selector), s.nodeProxies)
	}
	slices, err := s.o.Kube.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + svc.Name})
	if err != nil {
		return true // unknown: count it, so the check fails loudly rather than passes
	}
	for _, sl := range slices.Items {
		for _, ep := range sl.Endpoints {
			for _, addr := range ep.Addresses {
				for _, sh := range s.nodeProxies {
					if sh.ip != "" && sh.ip == addr {
						return true
					}
				}
			}
		}
	}
	return false
}

// ingressServices lists the Services an Ingress sends traffic to.
func ingressServices(ing *networkingv1.Ingress) []string {
	var out []string
	if b := ing.Spec.DefaultBackend; b != nil && b.Service != nil {
		out = append(out, b.Service.Name)
	}
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			if p.Backend.Service != nil {
				out = append(out, p.Backend.Service.Name)
			}
		}
	}
	return out
}
