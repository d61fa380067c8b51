package manifests_test

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestProxiedVariantsKeepClientAddresses: where an Ingress fronts the
// platform, the node proxies and the auth API must trust it
// (TRUSTED_PROXIES). Otherwise every client is the ingress controller's
// address: one client's failed logins rate-limit everyone's, and the
// per-client connection and body limits bind the controller as a whole.
func TestProxiedVariantsKeepClientAddresses(t *testing.T) {
	proxied := 0
	for name, objs := range everyRendering(t) {
		if !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Ingress" }) || !wholePlatform(objs) {
			continue
		}
		proxied++
		t.Run(name, func(t *testing.T) {
			for _, ds := range nodeproxyDaemonSets(t, objs) {
				if containerSettings(nodeproxyContainer(ds), objs)["TRUSTED_PROXIES"] == "" {
					t.Errorf("node proxy DaemonSet %s trusts no proxy, behind an Ingress", ds.Name)
				}
			}
			auth := decodeKind[appsv1.Deployment](t, objs, "Deployment", "authapi")
			if containerSettings(&auth.Spec.Template.Spec.Containers[0], objs)["TRUSTED_PROXIES"] == "" {
				t.Error("the auth API trusts no proxy, behind an Ingress")
			}
		})
	}
	if proxied == 0 {
		t.Fatal("no rendering puts the platform behind an Ingress")
	}
}

// TestIngressesPassUploads: every Ingress in front of the node proxies lets
// through the bodies they accept (MAX_BODY_MB); ingress-nginx's own limit
// is 1m, which would answer larger uploads 413 before a node proxy saw them.
func TestIngressesPassUploads(t *testing.T) {
	ingresses := 0
	for name, objs := range everyRendering(t) {
		proxies := nodeproxyDaemonSets(t, objs)
		for _, obj := range objs {
			if obj.GetKind() != "Ingress" || len(proxies) == 0 {
				continue
			}
			ingresses++
			want := containerSettings(nodeproxyContainer(proxies[0]), objs)["MAX_BODY_MB"] + "m"
			if got := obj.GetAnnotations()["nginx.ingress.kubernetes.io/proxy-body-size"]; got != want {
				t.Errorf("%s: Ingress %s/%s passes bodies up to %q, the node proxies accept %q", name, obj.GetNamespace(), obj.GetName(), got, want)
			}
		}
	}
	if ingresses == 0 {
		t.Fatal("no rendering has an Ingress in front of node proxies")
	}
}
