package netpolicy

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// namespaceNameLabel is the label the API server puts on every namespace.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// Options is what an Evaluator decides from.
type Options struct {
	// Policies are the NetworkPolicies in force, in any namespaces.
	Policies []networkingv1.NetworkPolicy
	// Namespaces maps a namespace name to its labels, for
	// namespaceSelectors. kubernetes.io/metadata.name is added to every
	// namespace, listed or not, as the API server does.
	Namespaces map[string]map[string]string
}

// Pod is an endpoint in the pod network.
type Pod struct {
	// Namespace and Labels are what selectors match.
	Namespace string
	Labels    map[string]string
	// Ports are the pod's container ports, for named ports in policies.
	Ports []corev1.ContainerPort
}

// Endpoint is one side of a connection: a pod, an address outside the
// pod network (a node, the API server, the internet), or both a pod and
// its address.
type Endpoint struct {
	// Pod is nil for an address outside the pod network: no policy
	// selects it, and only ipBlock peers match it.
	Pod *Pod
	// IP is the endpoint's address, which ipBlock peers match; a pod's
	// may be left invalid, and then no ipBlock matches it.
	IP netip.Addr
}

// Connection is one connection attempt from From to To on a destination
// port.
type Connection struct {
	From, To Endpoint
	Port     int32
	// Protocol is TCP when empty, as in a NetworkPolicyPort.
	Protocol corev1.Protocol
}

// Decision is the outcome of one direction of a connection.
type Decision struct {
	// Isolated is true when a policy selects the pod for this direction.
	Isolated bool
	// Allowed is true when the direction lets the connection pass.
	Allowed bool
	// Reason names the policy that admits the connection or the ones that
	// isolate the pod without admitting it.
	Reason string
}

// Verdict is the outcome of a connection: both the source's egress and
// the destination's ingress must allow it.
type Verdict struct {
	Egress, Ingress Decision
}

// Allowed reports whether the connection passes in both directions.
func (v Verdict) Allowed() bool { return v.Egress.Allowed && v.Ingress.Allowed }

// String explains the verdict in one line.
func (v Verdict) String() string {
	return "egress: " + v.Egress.Reason + "; ingress: " + v.Ingress.Reason
}

// Evaluator decides connections against a fixed set of policies.
type Evaluator struct {
	policies   []policy
	namespaces map[string]map[string]string
}

// New compiles the policies' selectors, CIDRs and ports once, and reports
// every policy that the API server would reject or that cannot be
// evaluated.
func New(opts Options) (*Evaluator, error) {
	e := &Evaluator{namespaces: map[string]map[string]string{}}
	for name, labels := range opts.Namespaces {
		e.namespaces[name] = withNameLabel(name, labels)
	}
	var errs []string
	for i := range opts.Policies {
		p, err := compile(&opts.Policies[i])
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		e.policies = append(e.policies, p)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("compile NetworkPolicies: %s", strings.Join(errs, "; "))
	}
	return e, nil
}

// Evaluate decides one connection.
func (e *Evaluator) Evaluate(c Connection) Verdict {
	if c.Protocol == "" {
		c.Protocol = corev1.ProtocolTCP
	}
	return Verdict{
		Egress:  e.decide(c, c.From, egress),
		Ingress: e.decide(c, c.To, ingress),
	}
}

// decide applies every policy that selects the pod at self (the source
// for egress, the destination for ingress) for direction d.
func (e *Evaluator) decide(c Connection, self Endpoint, d direction) Decision {
	if self.Pod == nil {
		return Decision{Allowed: true, Reason: "not a pod, no policy applies"}
	}
	var isolating []string
	for i := range e.policies {
		p := &e.policies[i]
		if p.namespace != self.Pod.Namespace || !p.types[d] || !p.selector.Matches(labelSet(self.Pod.Labels)) {
			continue
		}
		if e.admits(p, d, c) {
			return Decision{Isolated: true, Allowed: true, Reason: "admitted by " + p.name}
		}
		isolating = append(isolating, p.name)
	}
	if len(isolating) == 0 {
		return Decision{Allowed: true, Reason: "no policy selects the pod"}
	}
	sort.Strings(isolating)
	return Decision{Isolated: true, Reason: "isolated by " + strings.Join(isolating, ", ") + " and admitted by no rule"}
}

// admits reports whether one of p's rules for direction d admits c.
func (e *Evaluator) admits(p *policy, d direction, c Connection) bool {
	peer := c.From
	if d == egress {
		peer = c.To
	}
	for _, r := range p.rules[d] {
		if r.matchesPort(c) && e.matchesPeers(p, r, peer) {
			return true
		}
	}
	return false
}

// matchesPeers reports whether ep is one of r's peers; a rule without
// peers admits every peer.
func (e *Evaluator) matchesPeers(p *policy, r rule, ep Endpoint) bool {
	if len(r.peers) == 0 {
		return true
	}
	for _, pr := range r.peers {
		if pr.matches(p.namespace, ep, e.namespaceLabels) {
			return true
		}
	}
	return false
}

// namespaceLabels are the labels of namespace ns, with the name label
// also for namespaces not listed in Options.
func (e *Evaluator) namespaceLabels(ns string) map[string]string {
	if l, ok := e.namespaces[ns]; ok {
		return l
	}
	return withNameLabel(ns, nil)
}

func withNameLabel(name string, labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[namespaceNameLabel] = name
	return out
}
