package netpolicy

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Endpoints of the tables: pods in namespaces "app" and "other", and
// addresses outside the pod network.
var (
	web      = Endpoint{Pod: &Pod{Namespace: "app", Labels: map[string]string{"role": "web", "tier": "front"}, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}}}, IP: netip.MustParseAddr("10.244.1.2")}
	db       = Endpoint{Pod: &Pod{Namespace: "app", Labels: map[string]string{"role": "db"}}, IP: netip.MustParseAddr("10.244.1.3")}
	otherWeb = Endpoint{Pod: &Pod{Namespace: "other", Labels: map[string]string{"role": "web"}}, IP: netip.MustParseAddr("10.244.2.2")}
	noIPPod  = Endpoint{Pod: &Pod{Namespace: "other", Labels: map[string]string{"role": "batch"}}}
	node     = Endpoint{IP: netip.MustParseAddr("10.200.0.2")}
	internet = Endpoint{IP: netip.MustParseAddr("203.0.113.9")}
)

var namespaces = map[string]map[string]string{"app": {"team": "a"}, "other": {"team": "b"}}

func np(name, ns string, spec networkingv1.NetworkPolicySpec) networkingv1.NetworkPolicy {
	return networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
}

func sel(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func tcp(p int32) networkingv1.NetworkPolicyPort {
	port := intstr.FromInt32(p)
	return networkingv1.NetworkPolicyPort{Port: &port}
}

func proto(pr corev1.Protocol, p networkingv1.NetworkPolicyPort) networkingv1.NetworkPolicyPort {
	p.Protocol = &pr
	return p
}

func named(name string) networkingv1.NetworkPolicyPort {
	port := intstr.FromString(name)
	return networkingv1.NetworkPolicyPort{Port: &port}
}

func ranged(first, last int32) networkingv1.NetworkPolicyPort {
	p := tcp(first)
	p.EndPort = &last
	return p
}

func from(ports []networkingv1.NetworkPolicyPort, peers ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyIngressRule {
	return networkingv1.NetworkPolicyIngressRule{From: peers, Ports: ports}
}

func to(ports []networkingv1.NetworkPolicyPort, peers ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyEgressRule {
	return networkingv1.NetworkPolicyEgressRule{To: peers, Ports: ports}
}

func ports(p ...networkingv1.NetworkPolicyPort) []networkingv1.NetworkPolicyPort { return p }

func block(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
}

var (
	ingressOnly = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egressOnly  = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	both        = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
)

// dbFromWeb isolates db for ingress and admits web pods of its own
// namespace on 5432.
var dbFromWeb = np("db-from-web", "app", networkingv1.NetworkPolicySpec{
	PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
	Ingress: []networkingv1.NetworkPolicyIngressRule{from(ports(tcp(5432)), networkingv1.NetworkPolicyPeer{PodSelector: sel("role", "web")})},
})

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name     string
		policies []networkingv1.NetworkPolicy
		conn     Connection
		want     bool
		reason   string // a substring of the verdict's explanation
	}{
		{name: "no policy: everything passes", conn: Connection{From: otherWeb, To: db, Port: 5432}, want: true, reason: "no policy selects"},
		{name: "podSelector peer in the policy's namespace", policies: []networkingv1.NetworkPolicy{dbFromWeb},
			conn: Connection{From: web, To: db, Port: 5432}, want: true, reason: "admitted by app/db-from-web"},
		{name: "podSelector peer never matches another namespace", policies: []networkingv1.NetworkPolicy{dbFromWeb},
			conn: Connection{From: otherWeb, To: db, Port: 5432}, want: false, reason: "isolated by app/db-from-web"},
		{name: "port outside the rule", policies: []networkingv1.NetworkPolicy{dbFromWeb},
			conn: Connection{From: web, To: db, Port: 5433}, want: false},
		{name: "protocol outside the rule", policies: []networkingv1.NetworkPolicy{dbFromWeb},
			conn: Connection{From: web, To: db, Port: 5432, Protocol: corev1.ProtocolUDP}, want: false},
		{name: "a policy selects only its own namespace's pods", policies: []networkingv1.NetworkPolicy{
			np("deny", "other", networkingv1.NetworkPolicySpec{PolicyTypes: ingressOnly})},
			conn: Connection{From: web, To: db, Port: 5432}, want: true},
		{name: "empty podSelector and no rules: deny all ingress", policies: []networkingv1.NetworkPolicy{
			np("deny", "app", networkingv1.NetworkPolicySpec{PolicyTypes: ingressOnly})},
			conn: Connection{From: web, To: db, Port: 5432}, want: false},
		{name: "rule without from admits every source", policies: []networkingv1.NetworkPolicy{
			np("open", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(ports(tcp(5432)))}})},
			conn: Connection{From: internet, To: db, Port: 5432}, want: true},
		{name: "rule without ports admits every port", policies: []networkingv1.NetworkPolicy{
			np("web", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil, networkingv1.NetworkPolicyPeer{PodSelector: sel("role", "web")})}})},
			conn: Connection{From: web, To: db, Port: 1, Protocol: corev1.ProtocolSCTP}, want: true},
		{name: "policies add up: the second admits", policies: []networkingv1.NetworkPolicy{dbFromWeb,
			np("db-from-other", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil, networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("team", "b")})}})},
			conn: Connection{From: otherWeb, To: db, Port: 5432}, want: true, reason: "admitted by app/db-from-other"},
		{name: "namespaceSelector alone admits every pod there", policies: []networkingv1.NetworkPolicy{
			np("from-b", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil, networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("team", "b")})}})},
			conn: Connection{From: noIPPod, To: db, Port: 5432}, want: true},
		{name: "namespace name label is always there", policies: []networkingv1.NetworkPolicy{
			np("from-x", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil, networkingv1.NetworkPolicyPeer{NamespaceSelector: sel(namespaceNameLabel, "unlisted")})}})},
			conn: Connection{From: Endpoint{Pod: &Pod{Namespace: "unlisted"}}, To: db, Port: 5432}, want: true},
		{name: "namespaceSelector and podSelector in one peer: both must match", policies: []networkingv1.NetworkPolicy{
			np("and", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil, networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("team", "b"), PodSelector: sel("role", "batch")})}})},
			conn: Connection{From: otherWeb, To: db, Port: 5432}, want: false},
		{name: "two peers: either matches", policies: []networkingv1.NetworkPolicy{
			np("or", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil, networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("team", "b")}, networkingv1.NetworkPolicyPeer{PodSelector: sel("role", "batch")})}})},
			conn: Connection{From: otherWeb, To: db, Port: 5432}, want: true},
		{name: "matchExpressions", policies: []networkingv1.NetworkPolicy{
			np("expr", "app", networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "role", Operator: metav1.LabelSelectorOpIn, Values: []string{"db", "cache"}}}}, PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "tier", Operator: metav1.LabelSelectorOpExists}, {Key: "role", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}}}}})}})},
			conn: Connection{From: web, To: db, Port: 5432}, want: true},
		{name: "matchExpressions DoesNotExist refuses", policies: []networkingv1.NetworkPolicy{
			np("expr", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist}}}})}})},
			conn: Connection{From: web, To: db, Port: 5432}, want: false},
		{name: "ipBlock admits an address inside", policies: []networkingv1.NetworkPolicy{nodesToDB},
			conn: Connection{From: node, To: db, Port: 5432}, want: true},
		{name: "ipBlock except refuses", policies: []networkingv1.NetworkPolicy{nodesToDB},
			conn: Connection{From: Endpoint{IP: netip.MustParseAddr("10.200.0.9")}, To: db, Port: 5432}, want: false},
		{name: "ipBlock matches a pod's address", policies: []networkingv1.NetworkPolicy{
			np("pods", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil, block("10.244.2.0/24"))}})},
			conn: Connection{From: otherWeb, To: db, Port: 5432}, want: true},
		{name: "ipBlock never matches a pod without an address", policies: []networkingv1.NetworkPolicy{
			np("all", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil, block("0.0.0.0/0"))}})},
			conn: Connection{From: noIPPod, To: db, Port: 5432}, want: false},
		{name: "selectors never match an address", policies: []networkingv1.NetworkPolicy{
			np("any-pod", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}})}})},
			conn: Connection{From: node, To: db, Port: 5432}, want: false},
		{name: "endPort range includes its ends", policies: []networkingv1.NetworkPolicy{rangeToDB},
			conn: Connection{From: web, To: db, Port: 6010}, want: true},
		{name: "endPort range excludes beyond", policies: []networkingv1.NetworkPolicy{rangeToDB},
			conn: Connection{From: web, To: db, Port: 6011}, want: false},
		{name: "named port resolves on the destination pod", policies: []networkingv1.NetworkPolicy{namedToWeb},
			conn: Connection{From: db, To: web, Port: 8080}, want: true},
		{name: "named port does not match another number", policies: []networkingv1.NetworkPolicy{namedToWeb},
			conn: Connection{From: db, To: web, Port: 8081}, want: false},
		{name: "named UDP port needs the protocol", policies: []networkingv1.NetworkPolicy{
			np("dns", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "web"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(ports(proto(corev1.ProtocolUDP, named("dns"))))}})},
			conn: Connection{From: db, To: web, Port: 53, Protocol: corev1.ProtocolUDP}, want: true},
		{name: "named egress port never matches an address", policies: []networkingv1.NetworkPolicy{
			np("out", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: egressOnly,
				Egress: []networkingv1.NetworkPolicyEgressRule{to(ports(named("http")))}})},
			conn: Connection{From: db, To: internet, Port: 8080}, want: false},
		{name: "egress isolation: ipBlock with exceptions admits the internet", policies: []networkingv1.NetworkPolicy{dbEgress},
			conn: Connection{From: db, To: internet, Port: 443}, want: true},
		{name: "egress isolation: excepted private range refused", policies: []networkingv1.NetworkPolicy{dbEgress},
			conn: Connection{From: db, To: node, Port: 443}, want: false, reason: "egress: isolated by app/db-egress"},
		{name: "egress isolation: a pod target in the excepted range refused", policies: []networkingv1.NetworkPolicy{dbEgress},
			conn: Connection{From: db, To: otherWeb, Port: 443}, want: false},
		{name: "an Egress-only policy does not isolate ingress", policies: []networkingv1.NetworkPolicy{dbEgress},
			conn: Connection{From: otherWeb, To: db, Port: 5432}, want: true},
		{name: "destination admits but source egress refuses", policies: []networkingv1.NetworkPolicy{dbEgress,
			np("web-open", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "web"), PolicyTypes: ingressOnly,
				Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil)}})},
			conn: Connection{From: db, To: web, Port: 8080}, want: false},
		{name: "source egress admits but destination ingress refuses", policies: []networkingv1.NetworkPolicy{dbFromWeb,
			np("web-out", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "web"), PolicyTypes: egressOnly,
				Egress: []networkingv1.NetworkPolicyEgressRule{to(nil)}})},
			conn: Connection{From: web, To: db, Port: 9999}, want: false, reason: "egress: admitted by app/web-out"},
		{name: "no policyTypes with egress rules: egress isolated too", policies: []networkingv1.NetworkPolicy{
			np("implicit", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"),
				Egress: []networkingv1.NetworkPolicyEgressRule{to(ports(tcp(443)))}})},
			conn: Connection{From: db, To: internet, Port: 80}, want: false},
		{name: "no policyTypes without egress rules: egress open, ingress isolated", policies: []networkingv1.NetworkPolicy{
			np("implicit", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db")})},
			conn: Connection{From: db, To: internet, Port: 80}, want: true},
		{name: "Egress type without rules: deny all egress", policies: []networkingv1.NetworkPolicy{
			np("deny-out", "app", networkingv1.NetworkPolicySpec{PolicyTypes: both})},
			conn: Connection{From: web, To: internet, Port: 443}, want: false},
		{name: "addresses at both ends: no policy applies", policies: []networkingv1.NetworkPolicy{
			np("deny", "app", networkingv1.NetworkPolicySpec{PolicyTypes: both})},
			conn: Connection{From: node, To: internet, Port: 443}, want: true, reason: "not a pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(Options{Policies: tt.policies, Namespaces: namespaces})
			if err != nil {
				t.Fatal(err)
			}
			v := e.Evaluate(tt.conn)
			if v.Allowed() != tt.want {
				t.Errorf("allowed = %v, want %v (%s)", v.Allowed(), tt.want, v)
			}
			if !strings.Contains(v.String(), tt.reason) {
				t.Errorf("verdict %q does not say %q", v, tt.reason)
			}
		})
	}
}

var (
	nodesToDB = np("nodes", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
		Ingress: []networkingv1.NetworkPolicyIngressRule{from(ports(tcp(5432)), block("10.200.0.0/24", "10.200.0.8/29"))}})
	rangeToDB = np("range", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: ingressOnly,
		Ingress: []networkingv1.NetworkPolicyIngressRule{from(ports(ranged(6000, 6010)))}})
	namedToWeb = np("named", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "web"), PolicyTypes: ingressOnly,
		Ingress: []networkingv1.NetworkPolicyIngressRule{from(ports(named("http")))}})
	dbEgress = np("db-egress", "app", networkingv1.NetworkPolicySpec{PodSelector: *sel("role", "db"), PolicyTypes: egressOnly,
		Egress: []networkingv1.NetworkPolicyEgressRule{to(ports(tcp(443)), block("0.0.0.0/0", "10.0.0.0/8", "192.168.0.0/16"))}})
)

func TestNewRejects(t *testing.T) {
	bad := func(mutate func(*networkingv1.NetworkPolicySpec)) networkingv1.NetworkPolicy {
		p := np("bad", "app", networkingv1.NetworkPolicySpec{PolicyTypes: ingressOnly,
			Ingress: []networkingv1.NetworkPolicyIngressRule{from(nil, networkingv1.NetworkPolicyPeer{PodSelector: sel()})}})
		mutate(&p.Spec)
		return p
	}
	peer := func(pr networkingv1.NetworkPolicyPeer) func(*networkingv1.NetworkPolicySpec) {
		return func(s *networkingv1.NetworkPolicySpec) { s.Ingress[0].From[0] = pr }
	}
	port := func(p networkingv1.NetworkPolicyPort) func(*networkingv1.NetworkPolicySpec) {
		return func(s *networkingv1.NetworkPolicySpec) { s.Ingress[0].Ports = ports(p) }
	}
	end := int32(90)
	tests := []struct {
		name   string
		policy networkingv1.NetworkPolicy
		want   string
	}{
		{"no namespace", func() networkingv1.NetworkPolicy { p := dbFromWeb; p.Namespace = ""; return p }(), "has no namespace"},
		{"unknown policy type", bad(func(s *networkingv1.NetworkPolicySpec) { s.PolicyTypes = []networkingv1.PolicyType{"Sideways"} }), "unknown policy type"},
		{"bad selector operator", bad(func(s *networkingv1.NetworkPolicySpec) {
			s.PodSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
		}), "podSelector"},
		{"empty peer", bad(peer(networkingv1.NetworkPolicyPeer{})), "neither a selector nor an ipBlock"},
		{"ipBlock beside a selector", bad(peer(networkingv1.NetworkPolicyPeer{PodSelector: sel(), IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}})), "ipBlock beside a selector"},
		{"bad cidr", bad(peer(block("10.0.0.0/33"))), "ipBlock cidr"},
		{"except outside cidr", bad(peer(block("10.0.0.0/8", "192.168.0.0/16"))), "not a strict subset"},
		{"except equal to cidr", bad(peer(block("10.0.0.0/8", "10.0.0.0/8"))), "not a strict subset"},
		{"unknown protocol", bad(port(proto("ICMP", tcp(1)))), "unknown protocol"},
		{"endPort without port", bad(port(networkingv1.NetworkPolicyPort{EndPort: &end})), "endPort without port"},
		{"endPort with a named port", bad(port(func() networkingv1.NetworkPolicyPort { p := named("http"); p.EndPort = &end; return p }())), "named port"},
		{"reversed range", bad(port(ranged(100, 90))), "reversed"},
		{"port zero", bad(port(tcp(0))), "outside 1-65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Options{Policies: []networkingv1.NetworkPolicy{dbFromWeb, tt.policy}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error with %q", err, tt.want)
			}
		})
	}
}
