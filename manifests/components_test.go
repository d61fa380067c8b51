package manifests_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// exposureComponents are the exposure variants as kustomize Components,
// under components/: an overlay adds at most one.
var exposureComponents = []string{"ingress", "sso", "subdomain", "hostnetwork"}

// hardeningComponent is the optional hardening (docs/hardening.md), which
// goes beside any exposure.
const hardeningComponent = "hardening"

// isComponent reports whether the kustomization file is a kustomize
// Component, which renders only inside an overlay.
func isComponent(t *testing.T, file string) bool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var k struct{ Kind string }
	if err := utilyaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return k.Kind == "Component"
}

// combination is an overlay of the base with some Components.
type combination struct {
	name       string
	components []string
}

// combinations are every overlay an operator can make of the base: no
// exposure Component or one, each with and without hardening.
func combinations() []combination {
	var out []combination
	for _, hardening := range []bool{false, true} {
		for _, exposure := range append([]string{""}, exposureComponents...) {
			var c combination
			if exposure != "" {
				c.components = append(c.components, exposure)
			}
			if hardening {
				c.components = append(c.components, hardeningComponent)
			}
			c.name = "base+" + strings.Join(c.components, "+")
			out = append(out, c)
		}
	}
	return out
}

// renderCombination renders c, cached under its name.
func renderCombination(t *testing.T, c combination) []*unstructured.Unstructured {
	t.Helper()
	key := "combination " + c.name
	if _, ok := renders.Load(key); !ok {
		renders.LoadOrStore(key, kustomize(t, testkit.KustomizeOverlay(t, c.components, "")))
	}
	return build(t, key)
}

// everyRendering is every kustomization and combination with its objects.
func everyRendering(t *testing.T) map[string][]*unstructured.Unstructured {
	t.Helper()
	out := map[string][]*unstructured.Unstructured{}
	for _, dir := range kustomizationDirs(t) {
		out[dir] = build(t, dir)
	}
	for _, c := range combinations() {
		out[c.name] = renderCombination(t, c)
	}
	return out
}

func TestExposureVariantsAreComponents(t *testing.T) {
	found, err := filepath.Glob("components/*/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, k := range found {
		if !isComponent(t, k) {
			t.Errorf("%s is not a kustomize Component", k)
		}
		have = append(have, filepath.Base(filepath.Dir(k)))
	}
	want := append(slices.Clone(exposureComponents), hardeningComponent)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Errorf("components/ holds %v, want %v", have, want)
	}
}

// TestEveryCombinationAppliesByDryRun: the base with each exposure
// Component, or none, with and without hardening, is accepted by the real
// API server (server-side apply, dry run).
func TestEveryCombinationAppliesByDryRun(t *testing.T) {
	a := newApplier(t)
	for _, obj := range build(t, "namespace") {
		if err := a.apply(t, obj, false); err != nil {
			t.Fatalf("apply namespace: %v", err)
		}
	}
	for _, c := range combinations() {
		t.Run(c.name, func(t *testing.T) {
			for _, obj := range renderCombination(t, c) {
				if err := a.apply(t, obj, true); err != nil {
					t.Errorf("dry-run apply %s %s: %v", obj.GetKind(), obj.GetName(), err)
				}
			}
		})
	}
}

// crossNamespaceFiles may name a namespace: the node proxy's read-only
// Role and RoleBinding live in the sandbox namespace, beside what they
// grant, while everything else of the node proxy is in its own.
var crossNamespaceFiles = []string{"daemonset/rbac.yaml"}

// TestBaseNamesNoNamespace: the base's files leave the namespace to their
// kustomization, and every rendering keeps the split: the auth API and
// the sandboxes in sandgate, the node proxies in sandgate-node.
func TestBaseNamesNoNamespace(t *testing.T) {
	for _, part := range []string{"authapi", "daemonset", "sandbox", "networkpolicies", "quota"} {
		files, err := filepath.Glob(filepath.Join(part, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" || slices.Contains(crossNamespaceFiles, f) {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(line, "  namespace:") {
					t.Errorf("%s sets %q: leave it to the kustomization", f, strings.TrimSpace(line))
				}
			}
		}
	}
	want := map[string]string{
		"Deployment/authapi": sandboxNamespace, "SandboxTemplate/dsh": sandboxNamespace,
		"SandboxWarmPool/dsh-pool": sandboxNamespace, "ResourceQuota/sandgate-accounts": sandboxNamespace,
		"DaemonSet/nodeproxy": nodeproxyNamespace, "ServiceAccount/nodeproxy": nodeproxyNamespace,
		"Role/nodeproxy": sandboxNamespace, "ServiceAccount/authapi": sandboxNamespace,
	}
	for name, objs := range everyRendering(t) {
		if !wholePlatform(objs) {
			continue
		}
		for _, obj := range objs {
			ns := obj.GetNamespace()
			if w, ok := want[obj.GetKind()+"/"+obj.GetName()]; ok && ns != w {
				t.Errorf("%s: %s %s in namespace %q, want %q", name, obj.GetKind(), obj.GetName(), ns, w)
			}
			if ns != "" && ns != sandboxNamespace && ns != nodeproxyNamespace {
				t.Errorf("%s: %s %s in namespace %q, outside sandgate's two", name, obj.GetKind(), obj.GetName(), ns)
			}
		}
	}
}

// workloadConfigMaps maps each Deployment's and DaemonSet's name to the
// ConfigMaps its containers take their environment from.
func workloadConfigMaps(t *testing.T, objs []*unstructured.Unstructured) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" && obj.GetKind() != "DaemonSet" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			from, _, _ := unstructured.NestedSlice(c.(map[string]any), "envFrom")
			for _, f := range from {
				if name, ok, _ := unstructured.NestedString(f.(map[string]any), "configMapRef", "name"); ok {
					out[obj.GetName()] = append(out[obj.GetName()], name)
				}
			}
		}
	}
	return out
}

// TestConfigChangeRollsPods: the auth API's and the node proxies'
// ConfigMaps are generated, so changing a setting renames the ConfigMap,
// which changes the pod template and so rolls the pods.
func TestConfigChangeRollsPods(t *testing.T) {
	before := workloadConfigMaps(t, build(t, "."))
	changed := kustomize(t, testkit.KustomizeOverlay(t, nil, `patches:
  - target: {kind: ConfigMap, name: authapi-config}
    patch: '[{"op": "replace", "path": "/data/IDLE_TIMEOUT", "value": "30m"}]'
  - target: {kind: ConfigMap, name: nodeproxy-config}
    patch: '[{"op": "replace", "path": "/data/WAKE_TIMEOUT", "value": "90s"}]'
`))
	after := workloadConfigMaps(t, changed)
	for _, w := range []string{"authapi", "nodeproxy"} {
		if len(before[w]) == 0 {
			t.Fatalf("%s takes no ConfigMap", w)
		}
		if slices.Equal(before[w], after[w]) {
			t.Errorf("%s: a changed setting leaves its ConfigMap reference %v, so its pods do not roll", w, before[w])
		}
		for _, name := range after[w] {
			found := false
			for _, obj := range changed {
				found = found || (obj.GetKind() == "ConfigMap" && obj.GetName() == name)
			}
			if !found {
				t.Errorf("%s takes ConfigMap %s, which is not rendered", w, name)
			}
		}
	}
}

// TestAdmissionParamsFollowAuthAPIConfig: the admission policy reads
// CLAIM_PREFIX and WARM_POOL from authapi-admission-params, made from the
// same file as the auth API's ConfigMap; in every rendering they agree, so
// the policy admits exactly the claims the auth API creates.
func TestAdmissionParamsFollowAuthAPIConfig(t *testing.T) {
	for name, objs := range everyRendering(t) {
		var binding *unstructured.Unstructured
		for _, obj := range objs {
			if obj.GetKind() == "ValidatingAdmissionPolicyBinding" && obj.GetName() == "sandgate-authapi-writes" {
				binding = obj
			}
		}
		auth := workloadConfigMaps(t, objs)["authapi"]
		if binding == nil || len(auth) == 0 {
			continue
		}
		param, _, _ := unstructured.NestedString(binding.Object, "spec", "paramRef", "name")
		var params, config map[string]string
		for _, obj := range objs {
			if obj.GetKind() != "ConfigMap" {
				continue
			}
			data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
			switch obj.GetName() {
			case param:
				params = data
			case auth[0]:
				config = data
			}
		}
		if params == nil {
			t.Errorf("%s: the admission binding's parameters %q are not rendered", name, param)
			continue
		}
		for _, key := range []string{"CLAIM_PREFIX", "WARM_POOL"} {
			if params[key] == "" || params[key] != config[key] {
				t.Errorf("%s: admission parameter %s = %q, the auth API's = %q", name, key, params[key], config[key])
			}
		}
	}
}

// TestCommonLabels: every object the base renders, and the pods of its
// workloads, carry the app.kubernetes.io labels that name the release;
// what a Component adds is labelled part of sandgate too.
func TestCommonLabels(t *testing.T) {
	for _, c := range combinations() {
		for _, obj := range renderCombination(t, c) {
			if obj.GetLabels()["app.kubernetes.io/part-of"] != "sandgate" {
				t.Errorf("%s: %s %s is not labelled part of sandgate", c.name, obj.GetKind(), obj.GetName())
			}
		}
	}
	version := pinnedVersion(t)
	want := map[string]string{
		"app.kubernetes.io/part-of": "sandgate", "app.kubernetes.io/version": version,
		"app.kubernetes.io/managed-by": "kustomize",
	}
	for _, obj := range build(t, ".") {
		sets := map[string]map[string]string{"": obj.GetLabels()}
		if obj.GetKind() == "Deployment" || obj.GetKind() == "DaemonSet" {
			sets[" pod template"], _, _ = unstructured.NestedStringMap(obj.Object, "spec", "template", "metadata", "labels")
		}
		for where, labels := range sets {
			for k, v := range want {
				if labels[k] != v {
					t.Errorf("%s %s%s: label %s = %q, want %q", obj.GetKind(), obj.GetName(), where, k, labels[k], v)
				}
			}
		}
	}
}

// pinnedVersion is the release the base pins its images to (the images:
// of base/kustomization.yaml), which must be the same for every image of
// ours.
func pinnedVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("base", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct{ Name, NewName, NewTag string }
	}
	if err := utilyaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	for _, img := range k.Images {
		tags[img.NewTag] = true
	}
	if len(k.Images) == 0 || len(tags) != 1 || tags[""] {
		t.Fatalf("base/kustomization.yaml pins images %+v, want one tag for all", k.Images)
	}
	return k.Images[0].NewTag
}

// TestImagesPinned: the base runs our images at the pinned release, never
// :latest.
func TestImagesPinned(t *testing.T) {
	version := pinnedVersion(t)
	got := map[string]bool{}
	for _, obj := range build(t, ".") {
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			img, _, _ := unstructured.NestedString(c.(map[string]any), "image")
			got[img] = true
		}
	}
	for _, want := range []string{"sandgate/authapi:" + version, "sandgate/nodeproxy:" + version} {
		if !got[want] {
			t.Errorf("the base does not run %s; it runs %v", want, got)
		}
	}
}
