// Tests of the Helm chart: it renders what kustomize renders, lints, and
// the real API server accepts it.
package sandgate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// releaseLabels are the labels the chart sets where kustomize sets its
// own, and the annotation it adds when settings change.
var releaseLabels = []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart"}

// normalised is o as JSON without what only says who installed it.
func normalised(t *testing.T, o *unstructured.Unstructured) string {
	t.Helper()
	o = o.DeepCopy()
	drop := func(fields ...string) {
		labels, _, _ := unstructured.NestedStringMap(o.Object, fields...)
		for _, l := range releaseLabels {
			delete(labels, l)
		}
		if len(labels) == 0 {
			unstructured.RemoveNestedField(o.Object, fields...)
			return
		}
		_ = unstructured.SetNestedStringMap(o.Object, labels, fields...)
	}
	drop("metadata", "labels")
	drop("spec", "template", "metadata", "labels")
	data, err := json.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestChartRendersAsKustomize: with its default values, the chart renders
// the objects kustomize renders for every exposure, with and without
// hardening, apart from who manages them.
func TestChartRendersAsKustomize(t *testing.T) {
	kubectl, helm := kubectlPath(t), helmPath(t)
	for _, c := range combinations() {
		t.Run(c.String(), func(t *testing.T) {
			want := map[string]string{}
			for _, o := range kustomize(t, kubectl, c.components()) {
				want[key(o)] = normalised(t, o)
			}
			got := map[string]string{}
			for _, o := range helmTemplate(t, helm, c.values()...) {
				got[key(o)] = normalised(t, o)
			}
			for k, w := range want {
				switch g, ok := got[k]; {
				case !ok:
					t.Errorf("the chart lacks %s", k)
				case g != w:
					t.Errorf("%s differs:\nchart:     %s\nkustomize: %s", k, g, w)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("the chart renders %s, which kustomize does not", k)
				}
			}
		})
	}
}

// TestChartLints: helm lint passes with the defaults and with every
// exposure and hardening.
func TestChartLints(t *testing.T) {
	helm := helmPath(t)
	for _, c := range combinations() {
		args := []string{"lint", "--strict", "."}
		for _, v := range c.values() {
			args = append(args, "--set", v)
		}
		run(t, helm, args...)
	}
}

// customValues exercise every value the chart takes.
var customValues = []string{
	"exposure=ingress", "hardening.enabled=true", "images.tag=v9.9.9", "images.authapi=registry.example.com/sandgate/authapi",
	"images.nodeproxy=registry.example.com/sandgate/nodeproxy", "images.agent=registry.example.com/dsh-web:2.0", "images.pullPolicy=Always",
	"authapi.replicas=3", "authapi.resources.limits.memory=1Gi", "authapi.config.IDLE_TIMEOUT=30m",
	"nodeproxy.resources.limits.memory=2Gi", "nodeproxy.config.WAKE_TIMEOUT=90s",
	"sandboxes.warmPoolReplicas=5", "sandboxes.publicHosts=agents.example.org", "tls.ingressSecretName=agents-tls",
	"tls.certificate=CERT", "tls.key=KEY", "hopKey.generate=true",
}

// TestChartValuesApply: each value lands where it says.
func TestChartValuesApply(t *testing.T) {
	objs := helmTemplate(t, helmPath(t), customValues...)
	find := func(kind, name string) *unstructured.Unstructured {
		for _, o := range objs {
			if o.GetKind() == kind && (o.GetName() == name || strings.HasPrefix(o.GetName(), name+"-")) {
				return o
			}
		}
		t.Fatalf("no %s %s", kind, name)
		return nil
	}
	for _, tt := range []struct {
		kind, name string
		path       []string
		want       any
	}{
		{"Deployment", "authapi", []string{"spec", "replicas"}, float64(3)},
		{"Deployment", "authapi", []string{"spec", "template", "spec", "containers", "0", "image"}, "registry.example.com/sandgate/authapi:v9.9.9"},
		{"Deployment", "authapi", []string{"spec", "template", "spec", "containers", "0", "imagePullPolicy"}, "Always"},
		{"Deployment", "authapi", []string{"spec", "template", "spec", "containers", "0", "resources", "limits", "memory"}, "1Gi"},
		{"DaemonSet", "nodeproxy", []string{"spec", "template", "spec", "containers", "0", "image"}, "registry.example.com/sandgate/nodeproxy:v9.9.9"},
		{"DaemonSet", "nodeproxy", []string{"spec", "template", "spec", "containers", "0", "resources", "limits", "memory"}, "2Gi"},
		{"SandboxTemplate", "dsh", []string{"spec", "podTemplate", "spec", "containers", "0", "image"}, "registry.example.com/dsh-web:2.0"},
		{"SandboxTemplate", "dsh", []string{"spec", "podTemplate", "spec", "runtimeClassName"}, "gvisor"},
		{"SandboxWarmPool", "dsh-pool", []string{"spec", "replicas"}, float64(5)},
		{"ConfigMap", "sandgate-public", []string{"data", "DSH_TRUSTED_HOSTS"}, "agents.example.org"},
		{"ConfigMap", "authapi-config", []string{"data", "IDLE_TIMEOUT"}, "30m"},
		{"ConfigMap", "nodeproxy-config", []string{"data", "WAKE_TIMEOUT"}, "90s"},
		{"Ingress", "sandgate", []string{"spec", "tls", "0", "secretName"}, "agents-tls"},
		{"Secret", "nodeproxy-tls", []string{"type"}, "kubernetes.io/tls"},
	} {
		if got := field(find(tt.kind, tt.name).Object, tt.path); got != tt.want {
			t.Errorf("%s %s %s = %v (%T), want %v", tt.kind, tt.name, strings.Join(tt.path, "."), got, got, tt.want)
		}
	}
	for _, w := range []string{"authapi", "nodeproxy"} {
		kind := map[string]string{"authapi": "Deployment", "nodeproxy": "DaemonSet"}[w]
		if field(find(kind, w).Object, []string{"spec", "template", "metadata", "annotations", "sandgate.io/config-checksum"}) == nil {
			t.Errorf("%s: changed settings do not change the pod template, so its pods do not roll", w)
		}
	}
	key, _, _ := unstructured.NestedString(find("Secret", "nodeproxy-hop-key").Object, "data", "hop.key")
	if len(key) < 64 {
		t.Errorf("the generated hop key is %d base64 bytes, want 64 random characters", len(key))
	}
}

// field walks maps and (by index) lists.
func field(v any, path []string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i := 0
			for _, r := range p {
				i = i*10 + int(r-'0')
			}
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// TestChartAppliesByDryRun: the real API server accepts the chart rendered
// with the custom values and with each exposure (server-side apply, dry
// run), after its namespaces exist.
func TestChartAppliesByDryRun(t *testing.T) {
	kubectl, helm := kubectlPath(t), helmPath(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testkit.ControlPlane(t).WriteAdminKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	sets := [][]string{customValues}
	for _, c := range combinations() {
		sets = append(sets, c.values())
	}
	for _, c := range siteCases {
		sets = append(sets, c.set)
	}
	for _, set := range sets {
		args := []string{"template", "sandgate", "."}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		rendered := run(t, helm, args...)
		var namespaces []byte
		for _, o := range decode(t, rendered) {
			if o.GetKind() == "Namespace" {
				data, err := json.Marshal(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				namespaces = append(append(namespaces, data...), '\n')
			}
		}
		applyStdin(t, kubectl, kubeconfig, namespaces, "apply", "--server-side", "-f", "-")
		applyStdin(t, kubectl, kubeconfig, rendered, "apply", "--server-side", "--dry-run=server", "-f", "-")
	}
}

func applyStdin(t *testing.T, kubectl, kubeconfig string, stdin []byte, args ...string) {
	t.Helper()
	cmd := append([]string{"--kubeconfig", kubeconfig}, args...)
	out, err := runStdin(kubectl, stdin, cmd...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestChartVersionIsTheRelease: the chart's appVersion is the release
// manifests/base pins its images to.
func TestChartVersionIsTheRelease(t *testing.T) {
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	readYAML(t, "Chart.yaml", &chart)
	var base struct {
		Images []struct {
			NewTag string `json:"newTag"`
		} `json:"images"`
	}
	readYAML(t, filepath.Join("..", "..", "manifests", "base", "kustomization.yaml"), &base)
	if len(base.Images) == 0 {
		t.Fatal("manifests/base pins no image")
	}
	for _, img := range base.Images {
		if img.NewTag != chart.AppVersion {
			t.Errorf("manifests/base pins %s, the chart's appVersion is %s", img.NewTag, chart.AppVersion)
		}
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := utilyaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestChartGeneratesSSOProof: with sso.generateProof the SSO variant gets
// its sso-proxy-proof Secret in both namespaces, one value for oauth2-proxy
// and the node proxies; other exposures get none.
func TestChartGeneratesSSOProof(t *testing.T) {
	helm := helmPath(t)
	proofs := func(set ...string) map[string]string {
		out := map[string]string{}
		for _, o := range helmTemplate(t, helm, set...) {
			if o.GetKind() == "Secret" && o.GetName() == "sso-proxy-proof" {
				out[o.GetNamespace()], _, _ = unstructured.NestedString(o.Object, "data", "password")
			}
		}
		return out
	}
	got := proofs("exposure=sso", "sso.issuerURL=https://login.example.org/", "sso.allowedGroup=agents", "sso.generateProof=true")
	if len(got) != 2 || got["sandgate"] == "" || got["sandgate"] != got["sandgate-node"] {
		t.Errorf("sso-proxy-proof Secrets %v: want one password in sandgate and sandgate-node", got)
	}
	if got := proofs("exposure=ingress", "sso.generateProof=true"); len(got) != 0 {
		t.Errorf("exposure=ingress rendered sso-proxy-proof Secrets %v", got)
	}
}
