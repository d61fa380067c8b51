package manifests_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/clustertools/netpolicy"
)

// networkDocPath is the network documentation, relative to this package.
const networkDocPath = "../docs/network.md"

var updateNetworkDoc = flag.Bool("update-network-doc", false, "rewrite the generated tables of docs/network.md from docs/traffic-matrix.yaml")

// The generated part of docs/network.md lies between these lines.
const (
	matrixBegin = "<!-- traffic-matrix:begin: generated from docs/traffic-matrix.yaml by go test ./manifests/ -run TestNetworkDoc -update-network-doc -->"
	matrixEnd   = "<!-- traffic-matrix:end -->"
)

// TestNetworkDoc: docs/network.md shows every peer and every flow of the
// traffic matrix, as generated from it.
func TestNetworkDoc(t *testing.T) {
	m, err := netpolicy.LoadMatrix(matrixPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(networkDocPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	before, rest, ok1 := strings.Cut(doc, matrixBegin+"\n")
	_, after, ok2 := strings.Cut(rest, matrixEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no %q ... %q section", networkDocPath, matrixBegin, matrixEnd)
	}
	want := before + matrixBegin + "\n" + matrixMarkdown(m) + matrixEnd + after
	if want == doc {
		return
	}
	if *updateNetworkDoc {
		if err := os.WriteFile(networkDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s does not show %s as it is: run go test ./manifests/ -run TestNetworkDoc -update-network-doc", networkDocPath, matrixPath)
}

// matrixMarkdown renders the matrix's peers and each variant's flows as
// tables.
func matrixMarkdown(m *netpolicy.Matrix) string {
	var b strings.Builder
	b.WriteString("### Peers\n\n| peer | what it is |\n|---|---|\n")
	for _, name := range sortedPeerNames(m) {
		fmt.Fprintf(&b, "| `%s` | %s |\n", name, describePeer(m.Peers[name]))
	}
	for _, name := range m.VariantNames() {
		v := m.Variants[name]
		dir := "manifests/" + v.Dir
		if v.Dir == "." {
			dir = "manifests/"
		}
		fmt.Fprintf(&b, "\n### %s (`%s`)\n\n| from | to | port | verdict | why |\n|---|---|---|---|---|\n", name, dir)
		for _, f := range v.Flows {
			fmt.Fprintf(&b, "| `%s` | `%s` | %d/%s | %s | %s |\n", f.From, f.To, f.Port, f.Proto, word(f.Allowed), markdownEscaper.Replace(f.Why))
		}
	}
	return b.String()
}

var addressMeaning = map[netpolicy.AddressKind]string{
	netpolicy.AddressNode:      "address: a node's InternalIP",
	netpolicy.AddressAPIServer: "address: the API server's endpoint, outside the pod CIDR",
	netpolicy.AddressExternal:  "address: outside every cluster range (a browser; the internet)",
}

func describePeer(p netpolicy.MatrixPeer) string {
	if !p.IsPod() {
		return addressMeaning[p.Address]
	}
	var pairs []string
	for k, v := range p.Labels {
		pairs = append(pairs, k+"="+v)
	}
	slices.Sort(pairs)
	return fmt.Sprintf("pods `%s` in namespace `%s`", strings.Join(pairs, ","), p.Namespace)
}

// markdownEscaper keeps a reason's text as text inside a table cell.
var markdownEscaper = strings.NewReplacer("|", `\|`, "<", `\<`)
