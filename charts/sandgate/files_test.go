package sandgate_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// update rewrites the chart's files/ from manifests/ (make chart).
var update = flag.Bool("update", false, "rewrite files/ from manifests/")

// componentFile is what one kustomize Component changes in the base: the
// keys of the objects it removes (a Service it deletes, a ConfigMap whose
// generated name changes) and the objects it adds or replaces.
type componentFile struct {
	Remove []string         `json:"remove"`
	Upsert []map[string]any `json:"upsert"`
}

// chartFiles are files/ as manifests/ makes them: the base, then each
// Component's changes to it.
func chartFiles(t *testing.T, kubectl string) map[string][]byte {
	t.Helper()
	base := kustomize(t, kubectl, nil)
	files := map[string][]byte{"base.yaml": marshal(t, objects(base))}
	inBase := map[string]*unstructured.Unstructured{}
	for _, o := range base {
		inBase[key(o)] = o
	}
	for _, component := range append(exposures[1:], "hardening") {
		with := kustomize(t, kubectl, []string{component})
		var f componentFile
		kept := map[string]bool{}
		for _, o := range with {
			kept[key(o)] = true
			if b, ok := inBase[key(o)]; !ok || !reflect.DeepEqual(b.Object, o.Object) {
				f.Upsert = append(f.Upsert, o.Object)
			}
		}
		for _, o := range base {
			if !kept[key(o)] {
				f.Remove = append(f.Remove, key(o))
			}
		}
		files[component+".yaml"] = marshal(t, f)
	}
	return files
}

func objects(objs []*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = o.Object
	}
	return out
}

// marshal is v as YAML, behind a header that says where it comes from.
func marshal(t *testing.T, v any) []byte {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("# Generated from manifests/ by `make chart` (files_test.go): do not edit.\n"), data...)
}

// TestChartFilesMatchManifests: files/ is what manifests/ renders, so the
// chart and the kustomize base cannot drift; `make chart` regenerates it.
func TestChartFilesMatchManifests(t *testing.T) {
	want := chartFiles(t, kubectlPath(t))
	if *update {
		for name, data := range want {
			if err := os.WriteFile(filepath.Join("files", name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	have, err := filepath.Glob(filepath.Join("files", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(have) != len(want) {
		t.Errorf("files/ holds %v, want %d files: run `make chart`", have, len(want))
	}
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join("files", name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("files/%s is not what manifests/ renders (%v): run `make chart`", name, err)
		}
	}
}
