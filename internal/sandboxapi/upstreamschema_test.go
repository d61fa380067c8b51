package sandboxapi_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
)

// TestUpstreamSchema compares, for every field in usedFields, the v1beta1
// schema of our generated CRDs (manifests/crds) with upstream
// agent-sandbox's own (AGENT_SANDBOX_CRDS, which make test sets): type,
// format, required-ness, enum values, default, bounds, list type and CEL
// rules. It also fails on a field of ours the table lacks, and on a field
// upstream has beside ours that our types lack (a Get and Update through
// them would drop it).
func TestUpstreamSchema(t *testing.T) {
	dir := os.Getenv("AGENT_SANDBOX_CRDS")
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(clustertest.ErrNoUpstreamCRDs)
		}
		t.Skip("AGENT_SANDBOX_CRDS is unset: no upstream CRDs to compare with (make test sets it)")
	}
	root, err := clustertest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ours := schemas(t, filepath.Join(root, "manifests", "crds"))
	upstream := schemas(t, dir)
	for _, kind := range slices.Sorted(maps.Keys(usedFields)) {
		t.Run(kind, func(t *testing.T) {
			o, u := ours[kind], upstream[kind]
			if o == nil || u == nil {
				t.Fatalf("%s: v1beta1 schema in manifests/crds: %v, in %s: %v", kind, o != nil, dir, u != nil)
			}
			compareKind(t, usedFields[kind], o, u)
		})
	}
}

// compareKind checks one kind's table against both schemas.
func compareKind(t *testing.T, fields []field, ours, upstream map[string]any) {
	t.Helper()
	listed := map[string]field{}
	for _, f := range fields {
		listed[f.path] = f
	}
	for _, path := range ownPaths(ours, "", listed) {
		if _, ok := listed[path]; !ok {
			t.Errorf("%s is in our schema but not in usedFields: add it, with who reads or writes it", path)
		}
	}
	for _, f := range fields {
		o, oreq, ok := lookup(ours, f.path)
		if !ok {
			t.Errorf("%s: not in our schema (manifests/crds); run make generate, or drop it from usedFields", f.path)
			continue
		}
		u, ureq, ok := lookup(upstream, f.path)
		if !ok {
			if f.since == "" {
				t.Errorf("%s: upstream's schema lacks it; if a later release added it, mark it with since", f.path)
				continue
			}
			t.Logf("%s: a %s field, not in these upstream CRDs; checked against its release notes", f.path, f.since)
			checkWant(t, f, o, oreq)
			continue
		}
		var diffs []string
		if oreq != ureq && !strings.HasSuffix(f.path, "[]") {
			diffs = append(diffs, fmt.Sprintf("%s: required ours %v, upstream %v", f.path, oreq, ureq))
		}
		if f.embedded {
			var pruned []string
			diffs = append(diffs, compareTree(f.path, o, u, &pruned)...)
			if len(pruned) > 0 {
				t.Logf("%s: %d fields only our schema has (a newer Kubernetes API, or a known difference), which upstream's schema prunes, e.g. %s",
					f.path, len(pruned), strings.Join(pruned[:min(3, len(pruned))], ", "))
			}
		} else {
			diffs = append(diffs, compareNode(f.path, o, u)...)
			for _, name := range slices.Sorted(maps.Keys(props(u))) {
				if _, ok := props(o)[name]; !ok {
					diffs = append(diffs, fmt.Sprintf("%s.%s: upstream has it, our types do not (an Update through them drops it)", f.path, name))
				}
			}
		}
		switch {
		case f.known != "" && len(diffs) == 0:
			t.Errorf("%s: the known difference is gone (%s): drop the note", f.path, f.known)
		case f.known != "":
			t.Logf("%s: known difference, %s:\n  %s", f.path, f.known, strings.Join(diffs, "\n  "))
		default:
			for _, d := range diffs {
				t.Error(d)
			}
		}
	}
}

// checkWant holds a field upstream's CRDs lack to what its release says.
func checkWant(t *testing.T, f field, node map[string]any, required bool) {
	t.Helper()
	for k, want := range f.want {
		var got any = node[k]
		if k == "required" {
			got = required
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s (%s): %s is %v in our schema, want %v", f.path, f.since, k, got, want)
		}
	}
}

// keywords are the schema keywords compared on a node: what decides which
// values the API server accepts and what it stores.
var keywords = []string{
	"type", "format", "enum", "default", "nullable",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
	"minLength", "maxLength", "pattern", "minItems", "maxItems", "minProperties", "maxProperties",
	"x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
	"x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string", "x-kubernetes-embedded-resource",
	"x-kubernetes-validations",
}

// compareNode compares one node's keywords, with enum values as a set and
// the value type of a map or a list of scalars.
func compareNode(path string, ours, upstream map[string]any) []string {
	var diffs []string
	for _, k := range keywords {
		o, u := ours[k], upstream[k]
		if k == "enum" {
			o, u = sortedStrings(o), sortedStrings(u)
		}
		if !reflect.DeepEqual(o, u) {
			diffs = append(diffs, fmt.Sprintf("%s: %s ours %v, upstream %v", path, k, o, u))
		}
	}
	for _, sub := range []string{"additionalProperties", "items"} {
		o, _ := ours[sub].(map[string]any)
		u, _ := upstream[sub].(map[string]any)
		if props(o) == nil && props(u) == nil && !reflect.DeepEqual(o["type"], u["type"]) {
			diffs = append(diffs, fmt.Sprintf("%s: %s.type ours %v, upstream %v", path, sub, o["type"], u["type"]))
		}
	}
	return diffs
}

// compareTree compares a whole subtree; fields only ours has go to pruned.
func compareTree(path string, ours, upstream map[string]any, pruned *[]string) []string {
	diffs := compareNode(path, ours, upstream)
	op, up := props(ours), props(upstream)
	for _, name := range slices.Sorted(maps.Keys(op)) {
		child := path + "." + name
		u, ok := up[name].(map[string]any)
		if !ok {
			*pruned = append(*pruned, child)
			continue
		}
		if oreq, ureq := isRequired(ours, name), isRequired(upstream, name); oreq != ureq {
			diffs = append(diffs, fmt.Sprintf("%s: required ours %v, upstream %v", child, oreq, ureq))
		}
		diffs = append(diffs, compareTree(child, op[name].(map[string]any), u, pruned)...)
	}
	for _, name := range slices.Sorted(maps.Keys(up)) {
		if _, ok := op[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s.%s: upstream has it, our types do not", path, name))
		}
	}
	oi, _ := ours["items"].(map[string]any)
	ui, _ := upstream["items"].(map[string]any)
	if props(oi) != nil || props(ui) != nil {
		diffs = append(diffs, compareTree(path+"[]", oi, ui, pruned)...)
	}
	return diffs
}

// ownPaths lists the field paths of our schema below path, except the
// top-level object fields every kind has and what embedded fields hold.
func ownPaths(node map[string]any, path string, listed map[string]field) []string {
	if f, ok := listed[path]; ok && f.embedded {
		return nil
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(props(node))) {
		if path == "" && (name == "apiVersion" || name == "kind" || name == "metadata") {
			continue
		}
		child := strings.TrimPrefix(path+"."+name, ".")
		out = append(out, child)
		out = append(out, ownPaths(props(node)[name].(map[string]any), child, listed)...)
	}
	if items, ok := node["items"].(map[string]any); ok {
		out = append(out, ownPaths(items, path+"[]", listed)...)
	}
	return out
}

// lookup walks path from the schema root and says whether the parent
// requires the last field.
func lookup(root map[string]any, path string) (node map[string]any, required, ok bool) {
	node = root
	for _, seg := range strings.Split(path, ".") {
		name := strings.TrimRight(seg, "[]")
		child, ok := props(node)[name].(map[string]any)
		if !ok {
			return nil, false, false
		}
		required = isRequired(node, name)
		node = child
		for range strings.Count(seg[len(name):], "[]") {
			if node, ok = node["items"].(map[string]any); !ok {
				return nil, false, false
			}
			required = false
		}
	}
	return node, required, true
}

func props(node map[string]any) map[string]any {
	p, _ := node["properties"].(map[string]any)
	return p
}

func isRequired(node map[string]any, name string) bool {
	req, _ := node["required"].([]any)
	return slices.Contains(req, any(name))
}

func sortedStrings(v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = fmt.Sprint(x)
	}
	slices.Sort(out)
	return out
}

// schemas reads the v1beta1 openAPIV3Schema of each CRD in dir, by kind.
func schemas(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	objs, err := controlplane.ReadManifests(dir)
	if err != nil {
		t.Fatalf("read CRDs: %v", err)
	}
	out := map[string]map[string]any{}
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
		for _, v := range versions {
			v, _ := v.(map[string]any)
			if v["name"] != "v1beta1" {
				continue
			}
			if s, ok, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema"); ok {
				out[kind] = s
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no v1beta1 CRD schema in %s", dir)
	}
	return out
}
