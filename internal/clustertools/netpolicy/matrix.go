package netpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// AddressKind names an address outside the pod network that a matrix
// peer stands for; whoever checks the matrix picks a concrete address of
// that kind.
type AddressKind string

// The address kinds a matrix peer may have.
const (
	// AddressNode is a node's InternalIP.
	AddressNode AddressKind = "node"
	// AddressAPIServer is the API server's endpoint, outside the pod CIDR.
	AddressAPIServer AddressKind = "apiserver"
	// AddressExternal is outside every cluster range: a browser as a
	// source, the internet as a destination.
	AddressExternal AddressKind = "external"
)

// Matrix is the traffic matrix: named peers, and per exposure variant the
// flows that must pass or be refused.
type Matrix struct {
	// Peers maps a peer name to what it means.
	Peers map[string]MatrixPeer `json:"peers"`
	// Variants maps a variant name to its flows.
	Variants map[string]Variant `json:"variants"`
}

// MatrixPeer is either pods (a namespace and labels) or an address kind.
type MatrixPeer struct {
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Address   AddressKind       `json:"address,omitempty"`
}

// IsPod reports whether the peer is pods rather than an address.
func (p MatrixPeer) IsPod() bool { return p.Address == "" }

// Variant is one way of deploying: the kustomization (relative to
// manifests/) whose policies apply, and its flows.
type Variant struct {
	Dir   string `json:"dir"`
	Flows []Flow `json:"flows"`
}

// Flow is one connection from peer From to peer To on a destination port,
// with whether the policies must let it pass, and why.
type Flow struct {
	From    string          `json:"from"`
	To      string          `json:"to"`
	Port    int32           `json:"port"`
	Proto   corev1.Protocol `json:"proto"`
	Allowed bool            `json:"allowed"`
	Why     string          `json:"why"`
}

// String names the flow the way failures and tables show it.
func (f Flow) String() string {
	return fmt.Sprintf("%s -> %s %d/%s", f.From, f.To, f.Port, f.Proto)
}

// rawFlow has pointers where a missing field must be an error, not a zero.
type rawFlow struct {
	From    string          `json:"from"`
	To      string          `json:"to"`
	Port    *int32          `json:"port"`
	Proto   corev1.Protocol `json:"proto"`
	Allowed *bool           `json:"allowed"`
	Why     string          `json:"why"`
}

type rawMatrix struct {
	Peers    map[string]MatrixPeer `json:"peers"`
	Variants map[string]struct {
		Dir   string    `json:"dir"`
		Flows []rawFlow `json:"flows"`
	} `json:"variants"`
}

// LoadMatrix reads and checks a matrix file.
func LoadMatrix(path string) (*Matrix, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read traffic matrix: %w", err)
	}
	m, err := ParseMatrix(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ParseMatrix decodes a matrix from YAML, refusing unknown fields, and
// reports every problem in it at once.
func ParseMatrix(data []byte) (*Matrix, error) {
	js, err := yaml.ToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("parse traffic matrix: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var raw rawMatrix
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("decode traffic matrix: %w", err)
	}
	m := &Matrix{Peers: raw.Peers, Variants: map[string]Variant{}}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	for _, name := range sortedKeys(m.Peers) {
		checkPeer(name, m.Peers[name], bad)
	}
	if len(raw.Variants) == 0 {
		bad("no variants")
	}
	for name, rv := range raw.Variants {
		v := Variant{Dir: rv.Dir}
		if v.Dir == "" {
			bad("variant %s: no dir", name)
		}
		if len(rv.Flows) == 0 {
			bad("variant %s: no flows", name)
		}
		seen := map[string]bool{}
		for i, rf := range rv.Flows {
			f, ok := checkFlow(rf, m.Peers, func(format string, args ...any) {
				bad("variant %s flow %d: "+format, append([]any{name, i + 1}, args...)...)
			})
			if !ok {
				continue
			}
			if seen[f.String()] {
				bad("variant %s: %s listed twice", name, f)
			}
			seen[f.String()] = true
			v.Flows = append(v.Flows, f)
		}
		m.Variants[name] = v
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, fmt.Errorf("invalid traffic matrix: %s", strings.Join(problems, "; "))
	}
	return m, nil
}

func checkPeer(name string, p MatrixPeer, bad func(string, ...any)) {
	switch {
	case p.Address != "" && (p.Namespace != "" || len(p.Labels) > 0):
		bad("peer %s: both an address and pods", name)
	case p.Address == "" && (p.Namespace == "" || len(p.Labels) == 0):
		bad("peer %s: pods need a namespace and labels", name)
	case p.Address != "" && p.Address != AddressNode && p.Address != AddressAPIServer && p.Address != AddressExternal:
		bad("peer %s: unknown address kind %q", name, p.Address)
	}
}

// checkFlow turns rf into a Flow, or reports why it is not one.
func checkFlow(rf rawFlow, peers map[string]MatrixPeer, bad func(string, ...any)) (Flow, bool) {
	ok := true
	fail := func(format string, args ...any) { ok = false; bad(format, args...) }
	for _, end := range []string{rf.From, rf.To} {
		if _, known := peers[end]; !known {
			fail("unknown peer %q", end)
		}
	}
	if rf.Port == nil || *rf.Port < 1 || *rf.Port > 65535 {
		fail("port missing or outside 1-65535")
	}
	switch rf.Proto {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
	default:
		fail("proto %q is not TCP, UDP or SCTP", rf.Proto)
	}
	if rf.Allowed == nil {
		fail("allowed missing")
	}
	if strings.TrimSpace(rf.Why) == "" {
		fail("why missing")
	}
	if !ok {
		return Flow{}, false
	}
	return Flow{From: rf.From, To: rf.To, Port: *rf.Port, Proto: rf.Proto, Allowed: *rf.Allowed, Why: rf.Why}, true
}

// VariantNames lists the variants in a stable order.
func (m *Matrix) VariantNames() []string { return sortedKeys(m.Variants) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
