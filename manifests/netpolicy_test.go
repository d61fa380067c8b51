package manifests_test

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sandgate/sandgate/internal/clustertools/netpolicy"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// matrixPath is the traffic matrix, relative to this package.
const matrixPath = "../docs/traffic-matrix.yaml"

// modelAddresses are the addresses the test gives the matrix's address
// kinds: those of `make cluster` (internal/clustertools/localcluster), whose node
// network 10.200.0.0/24 the hostnetwork variant's policies admit, and a
// documentation address for the internet. Pods get addresses in its pod
// network, 10.244.0.0/16.
var modelAddresses = map[netpolicy.AddressKind]netip.Addr{
	netpolicy.AddressNode:      netip.MustParseAddr("10.200.0.3"),
	netpolicy.AddressAPIServer: netip.MustParseAddr("10.200.0.1"),
	netpolicy.AddressExternal:  netip.MustParseAddr("203.0.113.10"),
}

// TestTrafficMatrix evaluates every flow of docs/traffic-matrix.yaml
// against the NetworkPolicies each variant's kustomization renders: once
// as shipped, so nothing depends on the agent-sandbox controller copying
// the template's policy, and once with the policy the template asks the
// controller for, which must not open anything the matrix shuts.
func TestTrafficMatrix(t *testing.T) {
	m, err := netpolicy.LoadMatrix(matrixPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range m.VariantNames() {
		v := m.Variants[name]
		t.Run(name, func(t *testing.T) {
			r := renderVariant(t, v.Dir)
			model := newMatrixModel(m, r)
			model.checkFlows(t, v.Flows)
			sets := []policySet{{"shipped policies", r.policies}}
			if len(r.controllerPolicies) > 0 {
				sets = append(sets, policySet{"shipped policies and the sandbox template's", slices.Concat(r.policies, r.controllerPolicies)})
			}
			for _, set := range sets {
				ev, err := netpolicy.New(netpolicy.Options{Policies: set.policies, Namespaces: r.namespaces})
				if err != nil {
					t.Fatalf("variant %s (%s): %v", name, set.name, err)
				}
				for _, f := range v.Flows {
					verdict := ev.Evaluate(model.connection(f))
					if verdict.Allowed() != f.Allowed {
						t.Errorf("variant %s (%s, dir %s): %s is %s, want %s: %q\n\t%s",
							name, set.name, v.Dir, f, word(verdict.Allowed()), word(f.Allowed), f.Why, verdict)
					}
				}
			}
		})
	}
}

// TestTrafficMatrixCoversEveryVariant: each way of deploying has its flows
// in the matrix.
func TestTrafficMatrixCoversEveryVariant(t *testing.T) {
	m, err := netpolicy.LoadMatrix(matrixPath)
	if err != nil {
		t.Fatal(err)
	}
	exposures, err := filepath.Glob("exposure/*/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".", "hostnetwork"}
	for _, k := range exposures {
		want = append(want, filepath.Dir(k))
	}
	var have []string
	for _, v := range m.Variants {
		have = append(have, v.Dir)
	}
	for _, dir := range want {
		if !slices.Contains(have, dir) {
			t.Errorf("no variant of %s in %s", dir, matrixPath)
		}
	}
}

// policySet is a set of policies the matrix must hold under.
type policySet struct {
	name     string
	policies []networkingv1.NetworkPolicy
}

func word(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "refused"
}

// rendered is what the matrix is evaluated from in one variant.
type rendered struct {
	policies []networkingv1.NetworkPolicy
	// controllerPolicies are the policies the sandbox templates ask the
	// agent-sandbox controller to create.
	controllerPolicies []networkingv1.NetworkPolicy
	namespaces         map[string]map[string]string
	workloads          []workload
}

// workload is a rendered pod template.
type workload struct {
	kind, name, namespace string
	labels                map[string]string
	spec                  corev1.PodSpec
}

func renderVariant(t *testing.T, dir string) rendered {
	t.Helper()
	r := rendered{namespaces: map[string]map[string]string{}}
	for _, obj := range build(t, dir) {
		if err := r.add(obj); err != nil {
			t.Fatalf("%s: %s %s: %v", dir, obj.GetKind(), obj.GetName(), err)
		}
	}
	return r
}

func (r *rendered) add(obj *unstructured.Unstructured) error {
	from := func(into any) error {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		return nil
	}
	switch obj.GetKind() {
	case "Namespace":
		r.namespaces[obj.GetName()] = obj.GetLabels()
	case "NetworkPolicy":
		var np networkingv1.NetworkPolicy
		if err := from(&np); err != nil {
			return err
		}
		r.policies = append(r.policies, np)
	case "Deployment":
		var d appsv1.Deployment
		if err := from(&d); err != nil {
			return err
		}
		r.workloads = append(r.workloads, workload{"Deployment", d.Name, d.Namespace, d.Spec.Template.Labels, d.Spec.Template.Spec})
	case "DaemonSet":
		var d appsv1.DaemonSet
		if err := from(&d); err != nil {
			return err
		}
		r.workloads = append(r.workloads, workload{"DaemonSet", d.Name, d.Namespace, d.Spec.Template.Labels, d.Spec.Template.Spec})
	case "SandboxTemplate":
		var st extensions.SandboxTemplate
		if err := from(&st); err != nil {
			return err
		}
		pt := st.Spec.PodTemplate
		r.workloads = append(r.workloads, workload{"SandboxTemplate", st.Name, st.Namespace, pt.Metadata.Labels, pt.Spec})
		np, err := controllerPolicy(&st)
		if err != nil || np == nil {
			return err
		}
		r.controllerPolicies = append(r.controllerPolicies, *np)
	}
	return nil
}

// controllerPolicy is the NetworkPolicy the agent-sandbox controller
// creates for the template's sandboxes when it manages one: the
// template's rules for the template's pods.
func controllerPolicy(st *extensions.SandboxTemplate) (*networkingv1.NetworkPolicy, error) {
	if st.Spec.NetworkPolicyManagement == "Unmanaged" {
		return nil, nil
	}
	if st.Spec.NetworkPolicy == nil {
		return nil, fmt.Errorf("the template leaves its sandboxes to the controller's default NetworkPolicy, which this test does not model")
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "sandboxtemplate-" + st.Name, Namespace: st.Namespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: st.Spec.PodTemplate.Metadata.Labels},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     st.Spec.NetworkPolicy.Ingress,
			Egress:      st.Spec.NetworkPolicy.Egress,
		},
	}, nil
}

// matrixModel turns the matrix's peers into endpoints of one variant.
type matrixModel struct {
	peers map[string]netpolicy.MatrixPeer
	// pods are the rendered workloads each pod peer stands for.
	pods  map[string][]workload
	index map[string]int
}

func newMatrixModel(m *netpolicy.Matrix, r rendered) *matrixModel {
	model := &matrixModel{peers: m.Peers, pods: map[string][]workload{}, index: map[string]int{}}
	for i, name := range sortedPeerNames(m) {
		model.index[name] = i
		p := m.Peers[name]
		if !p.IsPod() {
			continue
		}
		for _, w := range r.workloads {
			if w.namespace == p.Namespace && labels.SelectorFromSet(p.Labels).Matches(labels.Set(w.labels)) {
				model.pods[name] = append(model.pods[name], w)
			}
		}
	}
	return model
}

func sortedPeerNames(m *netpolicy.Matrix) []string {
	var names []string
	for name := range m.Peers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// checkFlows: a peer that flows name as pods is not on the host network
// (its traffic would carry node addresses), and a flow the matrix allows
// to rendered pods names a port they declare, so a typo in the matrix
// cannot pass unnoticed.
func (m *matrixModel) checkFlows(t *testing.T, flows []netpolicy.Flow) {
	t.Helper()
	for _, f := range flows {
		for _, end := range []string{f.From, f.To} {
			for _, w := range m.pods[end] {
				if w.spec.HostNetwork {
					t.Errorf("matrix flow %s: %s %s runs on the host network here: name an address peer (such as nodeproxy-host)", f, w.kind, w.name)
				}
			}
		}
		ws := m.pods[f.To]
		if !f.Allowed || len(ws) == 0 {
			continue
		}
		if !slices.ContainsFunc(containerPorts(ws), func(cp corev1.ContainerPort) bool {
			return cp.ContainerPort == f.Port && (cp.Protocol == f.Proto || cp.Protocol == "" && f.Proto == corev1.ProtocolTCP)
		}) {
			t.Errorf("matrix flow %s: %s %s declares no container port %d/%s", f, ws[0].kind, ws[0].name, f.Port, f.Proto)
		}
	}
}

func containerPorts(ws []workload) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, w := range ws {
		for _, c := range w.spec.Containers {
			out = append(out, c.Ports...)
		}
	}
	return out
}

// connection is flow f between two distinct endpoints: the source pod in
// 10.244.1.0/24, the destination pod in 10.244.2.0/24, so a flow from a
// peer to itself is between two of its pods.
func (m *matrixModel) connection(f netpolicy.Flow) netpolicy.Connection {
	return netpolicy.Connection{From: m.endpoint(f.From, 1), To: m.endpoint(f.To, 2), Port: f.Port, Protocol: f.Proto}
}

func (m *matrixModel) endpoint(name string, subnet byte) netpolicy.Endpoint {
	p := m.peers[name]
	if !p.IsPod() {
		return netpolicy.Endpoint{IP: modelAddresses[p.Address]}
	}
	podLabels := p.Labels
	if ws := m.pods[name]; len(ws) > 0 {
		podLabels = ws[0].labels // all of the pod's labels, which policies may select by
	}
	return netpolicy.Endpoint{
		Pod: &netpolicy.Pod{Namespace: p.Namespace, Labels: podLabels, Ports: containerPorts(m.pods[name])},
		IP:  netip.AddrFrom4([4]byte{10, 244, subnet, byte(10 + m.index[name])}),
	}
}
