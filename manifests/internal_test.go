package manifests_test

import (
	"net"
	"net/url"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestInternalRoutesHaveTheirOwnPort: in every variant the auth API
// serves /internal/ and the JWKS on INTERNAL_ADDR, a port of its own that
// its public listener (the node proxies' target for browsers' requests)
// does not share, so no encoding of a path on the public port reaches an
// internal route; the node proxies call that port (AUTHAPI_INTERNAL_URL,
// JWKS_URL) through the auth API's Service; and the auth API admits the
// node proxies' ServiceAccount, in their namespace, on it. Which pods reach
// the port is TestTrafficMatrix's part.
func TestInternalRoutesHaveTheirOwnPort(t *testing.T) {
	for _, dir := range kustomizationDirs(t) {
		objs := build(t, dir)
		if !wholePlatform(objs) {
			continue
		}
		t.Run(dir, func(t *testing.T) {
			auth := decodeKind[appsv1.Deployment](t, objs, "Deployment", "authapi")
			authC := &auth.Spec.Template.Spec.Containers[0]
			authEnv := containerSettings(authC, objs)
			public, internal := addrPort(t, "LISTEN_ADDR", authEnv["LISTEN_ADDR"]), addrPort(t, "INTERNAL_ADDR", authEnv["INTERNAL_ADDR"])
			if internal == 0 || internal == public {
				t.Fatalf("the auth API serves /internal/ on its public port: INTERNAL_ADDR %q, LISTEN_ADDR %q", authEnv["INTERNAL_ADDR"], authEnv["LISTEN_ADDR"])
			}
			proxies := nodeproxyDaemonSets(t, objs)
			if len(proxies) != 1 {
				t.Fatalf("%d node proxy DaemonSets, want 1", len(proxies))
			}
			ds := proxies[0]
			proxyEnv := containerSettings(nodeproxyContainer(ds), objs)
			for _, tt := range []struct {
				setting string
				want    int32
			}{
				{"AUTHAPI_URL", public},
				{"AUTHAPI_INTERNAL_URL", internal},
				{"JWKS_URL", internal},
			} {
				if got := serviceTarget(t, objs, authC, proxyEnv[tt.setting]); got != tt.want {
					t.Errorf("node proxy %s %q reaches the auth API's port %d, want %d", tt.setting, proxyEnv[tt.setting], got, tt.want)
				}
			}
			sa := "system:serviceaccount:" + ds.Namespace + ":" + ds.Spec.Template.Spec.ServiceAccountName
			if got := authEnv["INTERNAL_ALLOWED_SERVICE_ACCOUNTS"]; got != sa {
				t.Errorf("INTERNAL_ALLOWED_SERVICE_ACCOUNTS is %q, want the node proxies' %q", got, sa)
			}
		})
	}
}

// serviceTarget is the auth API container port that a URL through a
// Service (http://<service>.<namespace>.svc:<port>/...) reaches, or 0.
func serviceTarget(t *testing.T, objs []*unstructured.Unstructured, c *corev1.Container, raw string) int32 {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Port() == "" {
		t.Errorf("%q is no URL with a port", raw)
		return 0
	}
	name, ns := serviceOfURL(raw)
	port, _ := strconv.Atoi(u.Port())
	for _, svc := range decodeAll[corev1.Service](t, objs, "Service", ns, name) {
		for _, sp := range svc.Spec.Ports {
			if sp.Port != int32(port) {
				continue
			}
			for _, cp := range c.Ports {
				if sp.TargetPort.StrVal == cp.Name && cp.Name != "" || sp.TargetPort.IntVal == cp.ContainerPort {
					return cp.ContainerPort
				}
			}
		}
	}
	return 0
}

// addrPort is the port of a listen address such as ":8081", or 0.
func addrPort(t *testing.T, name, addr string) int32 {
	t.Helper()
	if addr == "" {
		return 0
	}
	_, p, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(p)
	if err != nil || perr != nil {
		t.Fatalf("%s %q has no numeric port", name, addr)
	}
	return int32(n)
}

// decodeKind decodes the rendered object of kind and name.
func decodeKind[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	found := decodeAll[T](t, objs, kind, "", name)
	if len(found) == 0 {
		t.Fatalf("no %s %s", kind, name)
	}
	return found[0]
}

// decodeAll decodes the rendered objects of kind; a namespace or name
// that is not empty narrows them to the objects of that namespace or name.
func decodeAll[T any](t *testing.T, objs []*unstructured.Unstructured, kind, namespace, name string) []*T {
	t.Helper()
	var out []*T
	for _, obj := range objs {
		if obj.GetKind() != kind || namespace != "" && obj.GetNamespace() != namespace || name != "" && obj.GetName() != name {
			continue
		}
		v := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, v); err != nil {
			t.Fatalf("%s %s: %v", kind, obj.GetName(), err)
		}
		out = append(out, v)
	}
	return out
}
