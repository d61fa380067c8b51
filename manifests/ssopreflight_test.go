package manifests_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/clustertools/ssopreflight"
	"github.com/sandgate/sandgate/internal/clustertools/ssopreflight/preflighttest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestSSOPreflight applies the SSO variant to the real API server, once as
// shipped and once per broken condition, each in namespaces of its own,
// and runs the preflight: the shipped variant passes, and each break fails
// the right check with the right reason and no other check.
func TestSSOPreflight(t *testing.T) {
	believer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Forwarded-User") != "" {
			http.SetCookie(w, &http.Cookie{Name: "dsh_gw_session", Value: "x"})
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer believer.Close()
	refuser := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	defer refuser.Close()

	nodePolicy := func(objs []*unstructured.Unstructured) *unstructured.Unstructured {
		return findObj(t, objs, "NetworkPolicy", "nodeproxy-from-oauth2-proxy")
	}
	firstPeers := func(obj *unstructured.Unstructured) []any {
		rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ingress")
		peers, _ := rules[0].(map[string]any)["from"].([]any)
		return peers
	}
	setFirstPeers := func(obj *unstructured.Unstructured, peers []any) {
		rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ingress")
		rules[0].(map[string]any)["from"] = peers
		must(t, unstructured.SetNestedSlice(obj.Object, rules, "spec", "ingress"))
	}
	nodeConfig := func(objs []*unstructured.Unstructured) *unstructured.Unstructured {
		for _, obj := range objs {
			if obj.GetKind() == "ConfigMap" && strings.HasPrefix(obj.GetName(), "nodeproxy-config") {
				return obj
			}
		}
		t.Fatal("no nodeproxy-config ConfigMap")
		return nil
	}

	cases := []struct {
		name   string
		breaks func(objs []*unstructured.Unstructured, nodeNS string) []*unstructured.Unstructured
		probe  string
		check  string // "" when every check passes
		reason string
	}{
		{name: "shipped", probe: refuser.URL},
		{name: "no NetworkPolicy", check: ssopreflight.CheckNetworkPolicy, reason: "selects the node proxies",
			breaks: func(objs []*unstructured.Unstructured, _ string) []*unstructured.Unstructured {
				return slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetName() == "nodeproxy-from-oauth2-proxy" })
			}},
		{name: "NetworkPolicy selects other pods", check: ssopreflight.CheckNetworkPolicy, reason: "selects the node proxies",
			breaks: func(objs []*unstructured.Unstructured, _ string) []*unstructured.Unstructured {
				must(t, unstructured.SetNestedStringMap(nodePolicy(objs).Object, map[string]string{"app.kubernetes.io/name": "something-else"}, "spec", "podSelector", "matchLabels"))
				return objs
			}},
		{name: "NetworkPolicy admits a whole namespace", check: ssopreflight.CheckNetworkPolicy, reason: "admits every pod in namespace",
			breaks: func(objs []*unstructured.Unstructured, _ string) []*unstructured.Unstructured {
				np := nodePolicy(objs)
				peers := firstPeers(np)
				delete(peers[0].(map[string]any), "podSelector")
				setFirstPeers(np, peers)
				return objs
			}},
		{name: "NetworkPolicy admits an address block", check: ssopreflight.CheckNetworkPolicy, reason: "admits ipBlock 0.0.0.0/0",
			breaks: func(objs []*unstructured.Unstructured, _ string) []*unstructured.Unstructured {
				np := nodePolicy(objs)
				setFirstPeers(np, append(firstPeers(np), map[string]any{"ipBlock": map[string]any{"cidr": "0.0.0.0/0"}}))
				return objs
			}},
		{name: "NodePort Service", check: ssopreflight.CheckExposure, reason: "is type NodePort",
			breaks: func(objs []*unstructured.Unstructured, _ string) []*unstructured.Unstructured {
				must(t, unstructured.SetNestedField(findObj(t, objs, "Service", "nodeproxy").Object, "NodePort", "spec", "type"))
				return objs
			}},
		{name: "Ingress to the node proxies", check: ssopreflight.CheckExposure, reason: "routes to the node proxies through Service nodeproxy",
			breaks: func(objs []*unstructured.Unstructured, nodeNS string) []*unstructured.Unstructured {
				ing := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
					"metadata": map[string]any{"name": "direct", "namespace": nodeNS},
					"spec":     map[string]any{"defaultBackend": map[string]any{"service": map[string]any{"name": "nodeproxy", "port": map[string]any{"number": int64(80)}}}},
				}}
				return append(objs, ing)
			}},
		{name: "node proxies on the host network", check: ssopreflight.CheckExposure, reason: "host network",
			breaks: func(objs []*unstructured.Unstructured, _ string) []*unstructured.Unstructured {
				for _, obj := range objs {
					if obj.GetKind() == "DaemonSet" {
						must(t, unstructured.SetNestedField(obj.Object, true, "spec", "template", "spec", "hostNetwork"))
					}
				}
				return objs
			}},
		{name: "node proxies do not know the header", check: ssopreflight.CheckHeader, reason: "the node proxies pass a client's X-Forwarded-User through",
			breaks: func(objs []*unstructured.Unstructured, _ string) []*unstructured.Unstructured {
				unstructured.RemoveNestedField(nodeConfig(objs).Object, "data", "AUTH_PROXY_HEADER")
				return objs
			}},
		{name: "node proxies without the proof", check: ssopreflight.CheckHeader, reason: "has no AUTH_PROXY_SECRET_FILE",
			breaks: func(objs []*unstructured.Unstructured, _ string) []*unstructured.Unstructured {
				for _, obj := range objs {
					if obj.GetKind() != "DaemonSet" {
						continue
					}
					containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
					c := containers[0].(map[string]any)
					c["env"] = slices.DeleteFunc(c["env"].([]any), func(e any) bool { return e.(map[string]any)["name"] == "AUTH_PROXY_SECRET_FILE" })
					must(t, unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers"))
				}
				return objs
			}},
		{name: "node proxies trust every peer", check: ssopreflight.CheckHeader, reason: "trusts every peer",
			breaks: func(objs []*unstructured.Unstructured, _ string) []*unstructured.Unstructured {
				must(t, unstructured.SetNestedField(nodeConfig(objs).Object, "10.244.0.0/16,0.0.0.0/0", "data", "TRUSTED_PROXIES"))
				return objs
			}},
		// The variant's old setting: it holds the node CIDR admitted for
		// masqueraded hops, so host-network processes could assert users.
		{name: "node proxies trust the node CIDR", check: ssopreflight.CheckHeader, reason: "a node's address",
			breaks: func(objs []*unstructured.Unstructured, _ string) []*unstructured.Unstructured {
				must(t, unstructured.SetNestedField(nodeConfig(objs).Object, "10.0.0.0/8", "data", "TRUSTED_PROXIES"))
				return objs
			}},
		{name: "a node proxy believes the header", probe: believer.URL, check: ssopreflight.CheckHeader, reason: "is not stripped from untrusted peers"},
	}

	kube, err := kubernetes.NewForConfig(testkit.ControlPlane(t).AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names := map[string]string{"sandgate-node": fmt.Sprintf("pf%d-node", i), "sandgate": fmt.Sprintf("pf%d-sg", i)}
			objs := renamedNamespaces(t, build(t, "exposure/sso"), names)
			if tc.breaks != nil {
				objs = tc.breaks(objs, names["sandgate-node"])
			}
			if err := preflighttest.Apply(t.Context(), testkit.ControlPlane(t).AdminConfig(), []string{names["sandgate-node"], names["sandgate"]}, objs); err != nil {
				t.Fatal(err)
			}
			o := ssopreflight.Defaults()
			o.Kube = kube
			o.NodeNamespace, o.ProxyNamespace, o.AuthNamespace = names["sandgate-node"], names["sandgate"], names["sandgate"]
			o.AllowedCIDRs = []netip.Prefix{netip.MustParsePrefix("10.200.0.0/24")}
			o.ProbeURL = tc.probe
			results, err := ssopreflight.Run(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range results {
				switch {
				case r.OK:
				case r.Check == tc.check && strings.Contains(r.Reason, tc.reason):
					found = true
				default:
					t.Errorf("unexpected failure of %s: %s", r.Check, r.Reason)
				}
			}
			if tc.check != "" && !found {
				t.Errorf("%s did not fail with %q: %+v", tc.check, tc.reason, results)
			}
		})
	}
}

// renamedNamespaces is preflighttest.Renamed, failing t on an error.
func renamedNamespaces(t *testing.T, objs []*unstructured.Unstructured, names map[string]string) []*unstructured.Unstructured {
	t.Helper()
	out, err := preflighttest.Renamed(objs, names)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func findObj(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, obj := range objs {
		if obj.GetKind() == kind && obj.GetName() == name {
			return obj
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
