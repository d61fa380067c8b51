package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

// renderedPlatform renders the repository's manifests as the demo does,
// with --namespace namespace.
func renderedPlatform(t *testing.T, namespace string) rendered {
	t.Helper()
	bins, err := controlplane.FindBinaries(os.Getenv("KUBEBUILDER_ASSETS"), controlplane.DefaultCacheDir(os.Getenv))
	if err != nil {
		t.Fatalf("%v (run `make controlplane`)", err)
	}
	cfg := repoConfig(t)
	cfg.namespace = namespace
	m, err := renderManifests(context.Background(), bins.Kubectl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// repoConfig is the demo's default configuration with the repository's
// manifest directories.
func repoConfig(t *testing.T) config {
	t.Helper()
	cfg := defaults(os.Getenv)
	root := filepath.Join("..", "..", "manifests")
	cfg.manifests, cfg.crds = filepath.Join(root, "sandbox"), filepath.Join(root, "crds")
	cfg.authapiDir, cfg.nodeproxyDir = filepath.Join(root, "authapi"), filepath.Join(root, "daemonset")
	return cfg
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
// signing Secret and ConfigMaps of the rendered manifests in the
// namespaces they name, and nothing it runs or stands in for itself.
func TestPlatformManifests(t *testing.T) {
	m := renderedPlatform(t, "")
	got := map[string]bool{}
	for _, o := range m.objs {
		if _, ok := resources[o.GroupVersionKind()]; !ok {
			t.Errorf("%s %s: kind the demo cannot apply", o.GetKind(), o.GetName())
		}
		if platformKinds[o.GetKind()] {
			t.Errorf("demo applies %s %s, which it runs itself", o.GetKind(), o.GetName())
		}
		got[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = true
	}
	for _, want := range []string{
		"ServiceAccount/sandgate/authapi", "ServiceAccount/sandgate-node/nodeproxy", "Role/sandgate/authapi", "Role/sandgate/nodeproxy",
		"RoleBinding/sandgate/authapi", "RoleBinding/sandgate/nodeproxy", "ClusterRole//sandgate-authapi-tokenreview",
		"ClusterRoleBinding//sandgate-nodeproxy-nodes", "Secret/sandgate/sandgate-authapi-signing-keys",
		"SandboxTemplate/sandgate/dsh", "SandboxWarmPool/sandgate/dsh-pool",
	} {
		if !got[want] {
			t.Errorf("demo does not apply %s", want)
		}
	}
	if m.sandboxNamespace() != "sandgate" || m.authapi.serviceAccount != "authapi" ||
		m.nodeproxy.namespace != "sandgate-node" || m.nodeproxy.serviceAccount != "nodeproxy" {
		t.Errorf("workloads: authapi %+v, nodeproxy %+v", m.authapi, m.nodeproxy)
	}
}

// TestIdentitiesAgree is the check `make demo` once lacked: in every
// namespace the demo can run in, the node proxies run as an identity the
// auth API admits to /internal/, and the sandbox namespace's RoleBinding
// grants that identity its reads.
func TestIdentitiesAgree(t *testing.T) {
	for _, ns := range []string{"", "sandgate", "team"} {
		t.Run("namespace="+ns, func(t *testing.T) {
			m := renderedPlatform(t, ns)
			cfg := repoConfig(t)
			cfg.namespace = ns
			env, err := podEnv(nil, m.authapi, map[string]string{"metadata.name": "a", "metadata.namespace": m.sandboxNamespace(), "status.podIP": "127.0.0.1"},
				authapiOverrides(authapiRun{local: cfg.local(m)}))
			if err != nil {
				t.Fatal(err)
			}
			a := envMap(t, env)
			caller := "system:serviceaccount:" + m.nodeproxy.namespace + ":" + m.nodeproxy.serviceAccount
			if !slices.Contains(strings.Split(a["INTERNAL_ALLOWED_SERVICE_ACCOUNTS"], ","), caller) {
				t.Errorf("node proxies call as %s; the auth API admits %q", caller, a["INTERNAL_ALLOWED_SERVICE_ACCOUNTS"])
			}
			if a["NAMESPACE"] != m.sandboxNamespace() {
				t.Errorf("auth API NAMESPACE=%q, sandboxes in %s", a["NAMESPACE"], m.sandboxNamespace())
			}
			var bound bool
			for _, o := range m.objs {
				if o.GetKind() != "RoleBinding" || o.GetName() != "nodeproxy" {
					continue
				}
				subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
				for _, s := range subjects {
					s := s.(map[string]any)
					bound = bound || (o.GetNamespace() == m.sandboxNamespace() && s["namespace"] == m.nodeproxy.namespace && s["name"] == m.nodeproxy.serviceAccount)
				}
			}
			if !bound {
				t.Errorf("no RoleBinding in %s grants %s", m.sandboxNamespace(), caller)
			}
		})
	}
}

// TestPlatformEnv checks the processes' environments: the rendered
// workloads' settings (ConfigMaps and the pod spec's env) pass through,
// the downward API fields are filled, the local run's overrides win and
// unset, and nothing else of the demo's environment leaks in.
func TestPlatformEnv(t *testing.T) {
	m := renderedPlatform(t, "")
	cfg := repoConfig(t)
	base := baseEnv(func(k string) string {
		return map[string]string{"PATH": "/usr/bin", "HOME": "/home/u", "LISTEN_ADDR": ":1", "KUBECONFIG": "/admin"}[k]
	})
	local := cfg.local(m)

	env, err := podEnv(base, m.authapi, map[string]string{"metadata.name": "authapi-1", "status.podIP": "127.0.0.1"}, authapiOverrides(authapiRun{
		pod: "authapi-1", listen: "127.0.0.1:4000", internal: "127.0.0.1:4002", ops: "127.0.0.1:4001",
		kubeconfig: "/d/authapi.kubeconfig", local: local,
	}))
	if err != nil {
		t.Fatal(err)
	}
	a := envMap(t, env)
	for k, want := range map[string]string{
		// From the ConfigMap.
		"CLAIM_PREFIX": "dsh-", "WARM_POOL": "dsh-pool", "SESSION_TOKEN_TTL": "10m", "INTERNAL_AUDIENCE": "sandgate-authapi", "NAMESPACE": "sandgate",
		// From the Deployment's env.
		"INTERNAL_ALLOWED_SERVICE_ACCOUNTS": "system:serviceaccount:sandgate-node:nodeproxy", "POD_NAME": "authapi-1", "POD_IP": "127.0.0.1",
		// Overrides.
		"KUBECONFIG": "/d/authapi.kubeconfig", "LISTEN_ADDR": "127.0.0.1:4000", "INTERNAL_ADDR": "127.0.0.1:4002", "OPS_ADDR": "127.0.0.1:4001",
		"COOKIE_SECURE": "false", "ALLOW_INSECURE_COOKIES": "1", "TRUSTED_PROXIES": "127.0.0.0/8", "IDLE_TIMEOUT": "2m0s", "REPORT_INTERVAL": "5s",
		// Base.
		"PATH": "/usr/bin", "HOME": "/home/u",
	} {
		if a[k] != want {
			t.Errorf("authapi %s=%q, want %q", k, a[k], want)
		}
	}
	if _, err := podEnv(base, m.authapi, map[string]string{}, nil); err == nil {
		t.Error("unfilled fieldRef accepted")
	}

	env, err = podEnv(base, m.nodeproxy, map[string]string{"spec.nodeName": "sim-2"}, nodeproxyOverrides(nodeRun{
		node: "sim-2", listen: "127.0.1.2:5000", ops: "127.0.0.1:5001", logRoot: "/d/logs/sim-2",
		kubeconfig: "/d/nodeproxy.kubeconfig", tokenFile: "/d/nodeproxy.token", hopKeyFile: "/d/nodeproxy-hop.key",
		authURL: "http://127.0.0.1:6000", internalURL: "http://127.0.0.1:6001", local: local,
	}))
	if err != nil {
		t.Fatal(err)
	}
	n := envMap(t, env)
	for k, want := range map[string]string{
		"CLAIM_PREFIX": "dsh-", "MAX_IN_FLIGHT_PER_USER": "32", "WS_MAX_MESSAGE_BYTES": "16777216", "DSH_LOG_TAIL_LINES": "1000",
		"NODE_NAME": "sim-2", "LISTEN_ADDR": "127.0.1.2:5000", "OPS_ADDR": "127.0.0.1:5001", "LOG_ROOT": "/d/logs/sim-2",
		"KUBECONFIG": "/d/nodeproxy.kubeconfig", "SA_TOKEN_FILE": "/d/nodeproxy.token", "HOP_KEY_FILE": "/d/nodeproxy-hop.key",
		"AUTHAPI_URL": "http://127.0.0.1:6000", "AUTHAPI_INTERNAL_URL": "http://127.0.0.1:6001",
		"JWKS_URL":      "http://127.0.0.1:6001/.well-known/jwks.json",
		"COOKIE_SECURE": "false", "ALLOW_INSECURE_COOKIES": "1", "TRUSTED_PROXIES": "127.0.0.0/8", "REPORT_INTERVAL": "5s",
	} {
		if n[k] != want {
			t.Errorf("nodeproxy %s=%q, want %q", k, n[k], want)
		}
	}
	for _, k := range []string{"TLS_CERT_FILE", "TLS_KEY_FILE", "EGRESS_PROVIDERS", "PEER_PORT", "ROUTING_MODE"} {
		if v, ok := n[k]; ok {
			t.Errorf("nodeproxy %s=%q, want it unset", k, v)
		}
	}
	if got := overridden(m.nodeproxy, nodeproxyOverrides(nodeRun{local: local})); !strings.Contains(got, "TLS_CERT_FILE (unset)") ||
		!strings.Contains(got, "REPORT_INTERVAL=5s") || strings.Contains(got, "ROUTING_MODE") {
		t.Errorf("listed overrides %q", got)
	}

	sub := local
	sub.routing = routing{mode: "subdomain", userDomain: "localhost", publicOrigin: "http://localhost:8081"}
	sa := envMap(t, environ(m.authapi.env, authapiOverrides(authapiRun{local: sub})))
	sn := envMap(t, environ(m.nodeproxy.env, nodeproxyOverrides(nodeRun{local: sub})))
	for k, want := range map[string]string{"ROUTING_MODE": "subdomain", "USER_DOMAIN": "localhost"} {
		if sa[k] != want || sn[k] != want {
			t.Errorf("subdomain routing: authapi %s=%q, nodeproxy %s=%q, want %q", k, sa[k], k, sn[k], want)
		}
	}
	if sn["PUBLIC_ORIGIN"] != "http://localhost:8081" || sa["PUBLIC_ORIGIN"] != "" {
		t.Errorf("PUBLIC_ORIGIN: nodeproxy %q, authapi %q", sn["PUBLIC_ORIGIN"], sa["PUBLIC_ORIGIN"])
	}
}
