package ssopreflight

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestCoversPort(t *testing.T) {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	named := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	end := int32(8090)
	for _, tc := range []struct {
		name  string
		ports []networkingv1.NetworkPolicyPort
		want  bool
	}{
		{"no ports: all", nil, true},
		{"the port", []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: num(8080)}}, true},
		{"another port", []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: num(9090)}}, false},
		{"UDP", []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: num(8080)}}, false},
		{"a range over it", []networkingv1.NetworkPolicyPort{{Port: num(8000), EndPort: &end}}, true},
		{"a range below it", []networkingv1.NetworkPolicyPort{{Port: num(7000), EndPort: ptr(int32(7999))}}, false},
		{"a named port counts", []networkingv1.NetworkPolicyPort{{Port: named("http")}}, true},
		{"a protocol without a port", []networkingv1.NetworkPolicyPort{{Protocol: &tcp}}, true},
	} {
		if got := coversPort(tc.ports, 8080); got != tc.want {
			t.Errorf("%s: coversPort = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCheckPeer(t *testing.T) {
	o := Defaults()
	o.AllowedCIDRs = []netip.Prefix{netip.MustParsePrefix("10.200.0.0/24")}
	s := &state{
		o: o,
		namespaces: []corev1.Namespace{
			{ObjectMeta: metav1.ObjectMeta{Name: "sandgate", Labels: map[string]string{"kubernetes.io/metadata.name": "sandgate"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "sandgate-node", Labels: map[string]string{"kubernetes.io/metadata.name": "sandgate-node"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "ingress-nginx", Labels: map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"}}},
		},
		nodeProxies:   []podShape{{namespace: "sandgate-node", labels: o.NodeProxyLabels}},
		oauth2Proxies: []podShape{{namespace: "sandgate", labels: o.OAuth2ProxyLabels}},
		pods: []corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "sandgate", Name: "authapi-0", Labels: map[string]string{"app.kubernetes.io/name": "sandgate-authapi", "tier": "edge"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "sandgate", Name: "oauth2-proxy-0", Labels: map[string]string{"app.kubernetes.io/name": "oauth2-proxy", "tier": "edge"}}},
		},
	}
	ns := func(name string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": name}}
	}
	pods := func(l map[string]string) *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: l} }
	for _, tc := range []struct {
		name      string
		peer      networkingv1.NetworkPolicyPeer
		wantOK    bool
		wantProxy bool
	}{
		{"oauth2-proxy", networkingv1.NetworkPolicyPeer{NamespaceSelector: ns("sandgate"), PodSelector: pods(o.OAuth2ProxyLabels)}, true, true},
		{"other node proxies", networkingv1.NetworkPolicyPeer{PodSelector: pods(o.NodeProxyLabels)}, true, false},
		{"every pod of sandgate", networkingv1.NetworkPolicyPeer{NamespaceSelector: ns("sandgate")}, false, true},
		{"every namespace", networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: pods(o.OAuth2ProxyLabels)}, false, false},
		{"the ingress controller", networkingv1.NetworkPolicyPeer{NamespaceSelector: ns("ingress-nginx"), PodSelector: pods(map[string]string{"app": "ingress"})}, false, false},
		{"a label oauth2-proxy shares with the auth API", networkingv1.NetworkPolicyPeer{NamespaceSelector: ns("sandgate"), PodSelector: pods(map[string]string{"tier": "edge"})}, false, false},
		{"the node CIDR", networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.200.0.0/24"}}, true, false},
		{"a wider block", networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}, false, false},
		{"every address", networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}}, false, false},
	} {
		reason, proxy := s.checkPeer("sandgate-node", tc.peer)
		if (reason == "") != tc.wantOK || proxy != tc.wantProxy {
			t.Errorf("%s: reason %q, admits oauth2-proxy %v; want ok %v, %v", tc.name, reason, proxy, tc.wantOK, tc.wantProxy)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestHostIn: a trusted range that holds a node's address (a pod's host IP
// or the node CIDR admitted by ipBlock) is found; the pod CIDR is not.
func TestHostIn(t *testing.T) {
	o := Defaults()
	o.AllowedCIDRs = []netip.Prefix{netip.MustParsePrefix("10.200.0.0/24")}
	s := &state{o: o, pods: []corev1.Pod{{Status: corev1.PodStatus{HostIP: "10.128.0.2", PodIP: "10.244.1.7"}}}}
	for _, tc := range []struct {
		trusted string
		want    bool
	}{
		{"10.0.0.0/8", true},
		{"10.128.0.0/20", true},
		{"10.200.0.0/16", true},
		{"10.244.0.0/16", false},
	} {
		if _, got := s.hostIn(netip.MustParsePrefix(tc.trusted)); got != tc.want {
			t.Errorf("hostIn(%s) = %v, want %v", tc.trusted, got, tc.want)
		}
	}
}
