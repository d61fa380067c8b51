package controlplane_test

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

// TestReadManifestsGeneratesConfigMaps: a part whose settings are a
// kustomize configMapGenerator (manifests/authapi, manifests/daemonset)
// reads as its ConfigMaps under their plain names, in the kustomization's
// namespace, with every env file's keys.
func TestReadManifestsGeneratesConfigMaps(t *testing.T) {
	for _, tt := range []struct {
		dir, name, namespace string
		want                 map[string]string
	}{
		{"authapi", "authapi-config", "sandgate", map[string]string{"IDLE_TIMEOUT": "15m", "CLAIM_PREFIX": "dsh-", "LISTEN_ADDR": ":8080"}},
		{"authapi", "authapi-admission-params", "sandgate", map[string]string{"CLAIM_PREFIX": "dsh-", "WARM_POOL": "dsh-pool"}},
		{"daemonset", "nodeproxy-config", "", map[string]string{"NAMESPACE": "sandgate", "LOG_ROOT": "/var/log/pods"}},
	} {
		objs, err := controlplane.ReadManifests(filepath.Join("..", "..", "..", "manifests", tt.dir))
		if err != nil {
			t.Fatal(err)
		}
		var data map[string]string
		for _, obj := range objs {
			if obj.GetKind() == "ConfigMap" && obj.GetName() == tt.name {
				if obj.GetNamespace() != tt.namespace {
					t.Errorf("%s: namespace %q, want %q", tt.name, obj.GetNamespace(), tt.namespace)
				}
				data, _, _ = unstructured.NestedStringMap(obj.Object, "data")
			}
		}
		for k, v := range tt.want {
			if data[k] != v {
				t.Errorf("%s/%s: %s = %q, want %q", tt.dir, tt.name, k, data[k], v)
			}
		}
	}
}

func TestReadManifestsEnvFiles(t *testing.T) {
	for _, tt := range []struct {
		name, env string
		want      map[string]string
		fails     bool
	}{
		{name: "comments and blanks", env: "# c\n\nA=1\n  B=x=y\r\n", want: map[string]string{"A": "1", "B": "x=y"}},
		{name: "empty value", env: "A=\n", want: map[string]string{"A": ""}},
		{name: "no equals", env: "A\n", fails: true},
		{name: "no key", env: "=1\n", fails: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			kust := "configMapGenerator:\n  - name: cm\n    namespace: ns\n    envs: [a.env]\n"
			if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "a.env"), []byte(tt.env), 0o644); err != nil {
				t.Fatal(err)
			}
			objs, err := controlplane.ReadManifests(dir)
			if tt.fails {
				if err == nil {
					t.Fatalf("read %q: no error", tt.env)
				}
				return
			}
			if err != nil || len(objs) != 1 {
				t.Fatalf("read %q: %v, %d objects", tt.env, err, len(objs))
			}
			data, _, _ := unstructured.NestedStringMap(objs[0].Object, "data")
			if len(data) != len(tt.want) {
				t.Errorf("data %v, want %v", data, tt.want)
			}
			for k, v := range tt.want {
				if data[k] != v {
					t.Errorf("%s = %q, want %q", k, data[k], v)
				}
			}
		})
	}
}
