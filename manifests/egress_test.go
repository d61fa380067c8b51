package manifests_test

import (
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// nodeproxyDefaultEgressAddr is the node proxy's EGRESS_ADDR default.
const nodeproxyDefaultEgressAddr = ":8090"

// TestSandboxesCallTheirOwnNodesEgressListener: in every rendering with
// sandboxes and node proxies, the agent's OPENAI_BASE_URL names a Service
// that keeps the call on the sandbox's node (internalTrafficPolicy Local),
// selects the node proxies and reaches their EGRESS_ADDR port; and no
// egress port is a hostPort. The listener knows a caller only by its pod
// IP: on real nodes the CNI portmap plugin masquerades a pod's call to its
// own node's hostPort behind the bridge address, so every call through a
// hostPort was refused 403.
func TestSandboxesCallTheirOwnNodesEgressListener(t *testing.T) {
	checked := 0
	for name, objs := range everyRendering(t) {
		tmpl := sandboxTemplate(t, objs)
		daemonSets := nodeproxyDaemonSets(t, objs)
		if tmpl == nil || len(daemonSets) == 0 {
			continue
		}
		checked++
		t.Run(name, func(t *testing.T) {
			base := ""
			for _, c := range tmpl.Spec.PodTemplate.Spec.Containers {
				for _, e := range c.Env {
					if e.Name == "OPENAI_BASE_URL" {
						base = e.Value
					}
				}
			}
			if base == "" {
				t.Fatal("the sandbox template sets no OPENAI_BASE_URL")
			}
			for _, ds := range daemonSets {
				c := nodeproxyContainer(ds)
				addr := containerSettings(c, objs)["EGRESS_ADDR"]
				if addr == "" {
					addr = nodeproxyDefaultEgressAddr
				}
				want := addrPort(t, "EGRESS_ADDR", addr)
				if got := serviceTarget(t, objs, c, base); got != want {
					t.Errorf("OPENAI_BASE_URL %s reaches container port %d of %s, want EGRESS_ADDR's %d", base, got, ds.Name, want)
				}
				for _, p := range c.Ports {
					if p.ContainerPort == want && p.HostPort != 0 {
						t.Errorf("the egress port of %s is hostPort %d: portmap hides the caller's pod IP", ds.Name, p.HostPort)
					}
				}
				svc := urlService(t, objs, base)
				if svc == nil {
					continue
				}
				if p := svc.Spec.InternalTrafficPolicy; p == nil || *p != corev1.ServiceInternalTrafficPolicyLocal {
					t.Errorf("Service %s/%s lets a sandbox's call leave its node: internalTrafficPolicy is not Local", svc.Namespace, svc.Name)
				}
				if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(ds.Spec.Template.Labels)) || len(svc.Spec.Selector) == 0 {
					t.Errorf("Service %s/%s does not select the node proxies of %s", svc.Namespace, svc.Name, ds.Name)
				}
			}
		})
	}
	if checked == 0 {
		t.Fatal("no rendering ships both sandboxes and node proxies")
	}
}

// sandboxTemplate is the rendered SandboxTemplate, or nil.
func sandboxTemplate(t *testing.T, objs []*unstructured.Unstructured) *extensions.SandboxTemplate {
	t.Helper()
	if found := decodeAll[extensions.SandboxTemplate](t, objs, "SandboxTemplate", "", ""); len(found) > 0 {
		return found[0]
	}
	return nil
}

// urlService is the Service that a URL http://<service>.<namespace>.svc:<port>/
// names, or nil (the test fails).
func urlService(t *testing.T, objs []*unstructured.Unstructured, raw string) *corev1.Service {
	t.Helper()
	name, ns := serviceOfURL(raw)
	if found := decodeAll[corev1.Service](t, objs, "Service", ns, name); len(found) > 0 {
		return found[0]
	}
	t.Errorf("%s names no rendered Service", raw)
	return nil
}

// serviceOfURL is the Service name and namespace of a URL
// http://<service>.<namespace>.svc:<port>/.
func serviceOfURL(raw string) (name, namespace string) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", ""
	}
	name, namespace, _ = strings.Cut(strings.TrimSuffix(u.Hostname(), ".svc"), ".")
	return name, namespace
}
