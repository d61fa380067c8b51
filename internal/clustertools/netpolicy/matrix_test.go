package netpolicy

import (
	"os"
	"strings"
	"testing"
)

const validMatrix = `
peers:
  web: {namespace: app, labels: {role: web}}
  outside: {address: external}
variants:
  base:
    dir: .
    flows:
      - {from: outside, to: web, port: 443, proto: TCP, allowed: true, why: "entry"}
      - {from: web, to: outside, port: 25, proto: TCP, allowed: false, why: "no mail"}
`

func TestParseMatrix(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       string // a substring of the error; empty: valid
	}{
		{"valid", validMatrix, ""},
		{"unknown field", strings.Replace(validMatrix, "allowed: true", "allow: true", 1), "unknown field"},
		{"allowed missing", strings.Replace(validMatrix, "allowed: true, ", "", 1), "allowed missing"},
		{"port missing", strings.Replace(validMatrix, "port: 443, ", "", 1), "port missing"},
		{"port too large", strings.Replace(validMatrix, "port: 443", "port: 70000", 1), "outside 1-65535"},
		{"unknown peer", strings.Replace(validMatrix, "to: web", "to: wbe", 1), `unknown peer "wbe"`},
		{"bad proto", strings.Replace(validMatrix, "proto: TCP", "proto: tcp", 1), `proto "tcp"`},
		{"why missing", strings.Replace(validMatrix, `why: "entry"`, `why: " "`, 1), "why missing"},
		{"twice", strings.Replace(validMatrix, "port: 25", "port: 443", 1) + "      - {from: outside, to: web, port: 443, proto: TCP, allowed: false, why: x}\n", "listed twice"},
		{"address and pods", strings.Replace(validMatrix, "{address: external}", "{address: external, namespace: x}", 1), "both an address and pods"},
		{"pods without labels", strings.Replace(validMatrix, "{namespace: app, labels: {role: web}}", "{namespace: app}", 1), "need a namespace and labels"},
		{"unknown address", strings.Replace(validMatrix, "external", "moon", 1), `unknown address kind "moon"`},
		{"no dir", strings.Replace(validMatrix, "dir: .", "dir: ''", 1), "no dir"},
		{"no variants", "peers: {}\n", "no variants"},
		{"not yaml", "peers: [", "parse traffic matrix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseMatrix([]byte(tt.yaml))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				f := m.Variants["base"].Flows[0]
				if f.String() != "outside -> web 443/TCP" || !f.Allowed || f.Why != "entry" || !m.Peers["web"].IsPod() {
					t.Errorf("parsed %+v", m)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseMatrix = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// FuzzParseMatrix: whatever the file holds, parsing returns a matrix whose
// flows all name known peers, or an error; it never panics.
func FuzzParseMatrix(f *testing.F) {
	f.Add([]byte(validMatrix))
	if shipped, err := os.ReadFile("../../../docs/traffic-matrix.yaml"); err == nil {
		f.Add(shipped)
	}
	f.Add([]byte("variants: {a: {dir: x, flows: [{from: a, to: a, port: 1, proto: UDP, allowed: false, why: y}]}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMatrix(data)
		if err != nil {
			return
		}
		for name, v := range m.Variants {
			for _, fl := range v.Flows {
				if _, ok := m.Peers[fl.From]; !ok {
					t.Fatalf("variant %s: flow %s from an unknown peer", name, fl)
				}
				if _, ok := m.Peers[fl.To]; !ok {
					t.Fatalf("variant %s: flow %s to an unknown peer", name, fl)
				}
			}
		}
	})
}
