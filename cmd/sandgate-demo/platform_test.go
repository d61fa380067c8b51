package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

// platformObjects reads the auth API and node proxy manifests as the demo
// does.
func platformObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, dir := range []string{"authapi", "daemonset"} {
		more, err := controlplane.ReadManifests(filepath.Join("..", "..", "manifests", dir))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, applicable(more)...)
	}
	return objs
}

// envMap turns a KEY=VALUE list into a map, failing on duplicates.
func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	if !slices.IsSorted(env) {
		t.Errorf("environment not sorted: %v", env)
	}
	m := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if _, dup := m[k]; !ok || dup {
			t.Errorf("bad or duplicate entry %q", kv)
		}
		m[k] = v
	}
	return m
}

// TestPlatformManifests checks that the demo applies the identities, RBAC,
// signing Secret and ConfigMaps of the platform manifests, and nothing it
// runs as a process.
func TestPlatformManifests(t *testing.T) {
	objs := platformObjects(t)
	got := map[string]bool{}
	for _, o := range objs {
		if _, ok := resources[o.GroupVersionKind()]; !ok {
			t.Errorf("%s %s: kind the demo cannot apply", o.GetKind(), o.GetName())
		}
		got[o.GetKind()+"/"+o.GetName()] = true
	}
	for _, want := range []string{
		"ServiceAccount/authapi", "ServiceAccount/nodeproxy", "Role/authapi", "Role/nodeproxy",
		"RoleBinding/authapi", "RoleBinding/nodeproxy", "ClusterRole/sandgate-authapi-tokenreview",
		"ClusterRoleBinding/sandgate-nodeproxy-nodes", "Secret/sandgate-authapi-signing-keys",
		"ConfigMap/" + authapiConfigMap, "ConfigMap/" + nodeproxyConfigMap,
	} {
		if !got[want] {
			t.Errorf("demo does not apply %s", want)
		}
	}
	for k := range got {
		if platformKinds[strings.Split(k, "/")[0]] {
			t.Errorf("demo applies %s, which it runs itself", k)
		}
	}
	for _, o := range objs {
		if o.GetKind() == "ClusterRoleBinding" {
			o = o.DeepCopy()
			relocateSubjects(o, "elsewhere")
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			if len(subjects) == 0 || subjects[0].(map[string]any)["namespace"] != "elsewhere" {
				t.Errorf("%s subjects not moved: %v", o.GetName(), subjects)
			}
		}
	}
}

// TestPlatformEnv checks the processes' environments: the ConfigMaps'
// settings pass through, the local run's overrides win, and nothing else
// of the demo's environment leaks in.
func TestPlatformEnv(t *testing.T) {
	objs := platformObjects(t)
	authCM, err := configMapData(objs, authapiConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	nodeCM, err := configMapData(objs, nodeproxyConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := configMapData(objs, "missing"); err == nil {
		t.Error("missing ConfigMap found")
	}
	base := baseEnv(func(k string) string {
		return map[string]string{"PATH": "/usr/bin", "HOME": "/home/u", "LISTEN_ADDR": ":1", "KUBECONFIG": "/admin"}[k]
	})

	a := envMap(t, authapiEnv(base, authCM, "sandgate", authapiRun{
		pod: "authapi-1", listen: "127.0.0.1:4000", ops: "127.0.0.1:4001", kubeconfig: "/d/authapi.kubeconfig",
	}))
	for k, want := range map[string]string{
		// From the ConfigMap.
		"CLAIM_PREFIX": "dsh-", "WARM_POOL": "dsh-pool", "SESSION_TOKEN_TTL": "10m", "INTERNAL_AUDIENCE": "sandgate-authapi",
		// Overrides.
		"NAMESPACE": "sandgate", "KUBECONFIG": "/d/authapi.kubeconfig", "LISTEN_ADDR": "127.0.0.1:4000", "OPS_ADDR": "127.0.0.1:4001",
		"COOKIE_SECURE": "false", "ALLOW_INSECURE_COOKIES": "1", "TRUSTED_PROXIES": "127.0.0.0/8", "POD_NAME": "authapi-1",
		"IDLE_TIMEOUT": "2m", "REPORT_INTERVAL": "5s",
		// Base.
		"PATH": "/usr/bin", "HOME": "/home/u",
	} {
		if a[k] != want {
			t.Errorf("authapi %s=%q, want %q", k, a[k], want)
		}
	}
	if len(a) != len(authCM)+len(base)+4 { // + KUBECONFIG, ALLOW_INSECURE_COOKIES, POD_NAME, POD_IP
		t.Errorf("authapi environment has unexpected entries: %v", a)
	}
	moved := envMap(t, authapiEnv(base, authCM, "team", authapiRun{}))
	if moved["NAMESPACE"] != "team" || moved["INTERNAL_ALLOWED_SERVICE_ACCOUNTS"] != "system:serviceaccount:team:nodeproxy" {
		t.Errorf("namespace team: %v", moved)
	}

	n := envMap(t, nodeproxyEnv(base, nodeCM, "sandgate", nodeRun{
		node: "sim-2", listen: "127.0.1.2:5000", ops: "127.0.0.1:5001", logRoot: "/d/logs/sim-2",
		kubeconfig: "/d/nodeproxy.kubeconfig", tokenFile: "/d/nodeproxy.token", hopKeyFile: "/d/nodeproxy-hop.key",
		authURL: "http://127.0.0.1:6000",
	}))
	for k, want := range map[string]string{
		"CLAIM_PREFIX": "dsh-", "MAX_IN_FLIGHT_PER_USER": "32", "WS_MAX_MESSAGE_BYTES": "16777216", "DSH_LOG_TAIL_LINES": "1000",
		"NODE_NAME": "sim-2", "LISTEN_ADDR": "127.0.1.2:5000", "OPS_ADDR": "127.0.0.1:5001", "LOG_ROOT": "/d/logs/sim-2",
		"KUBECONFIG": "/d/nodeproxy.kubeconfig", "SA_TOKEN_FILE": "/d/nodeproxy.token", "HOP_KEY_FILE": "/d/nodeproxy-hop.key",
		"AUTHAPI_URL": "http://127.0.0.1:6000", "JWKS_URL": "http://127.0.0.1:6000/.well-known/jwks.json",
		"COOKIE_SECURE": "false", "ALLOW_INSECURE_COOKIES": "1", "TRUSTED_PROXIES": "127.0.0.0/8",
		"REPORT_INTERVAL": "5s",
	} {
		if n[k] != want {
			t.Errorf("nodeproxy %s=%q, want %q", k, n[k], want)
		}
	}
	if _, ok := n["PEER_PORT"]; ok {
		t.Error("PEER_PORT set: node proxies must default it to their shared listen port")
	}
	if _, ok := n["ROUTING_MODE"]; ok {
		t.Error("ROUTING_MODE set in path routing")
	}

	sub := routing{mode: "subdomain", userDomain: "localhost", publicOrigin: "http://localhost:8081"}
	sa := envMap(t, authapiEnv(base, authCM, "sandgate", authapiRun{routing: sub}))
	sn := envMap(t, nodeproxyEnv(base, nodeCM, "sandgate", nodeRun{routing: sub}))
	for k, want := range map[string]string{"ROUTING_MODE": "subdomain", "USER_DOMAIN": "localhost"} {
		if sa[k] != want || sn[k] != want {
			t.Errorf("subdomain routing: authapi %s=%q, nodeproxy %s=%q, want %q", k, sa[k], k, sn[k], want)
		}
	}
	if sn["PUBLIC_ORIGIN"] != "http://localhost:8081" || sa["PUBLIC_ORIGIN"] != "" {
		t.Errorf("PUBLIC_ORIGIN: nodeproxy %q, authapi %q", sn["PUBLIC_ORIGIN"], sa["PUBLIC_ORIGIN"])
	}
}
