package controlplane_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

func TestWithoutConversionWebhook(t *testing.T) {
	webhook := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"conversion": map[string]any{
			"strategy": "Webhook",
			"webhook":  map[string]any{"clientConfig": map[string]any{"service": map[string]any{"name": "agent-sandbox-webhook-service"}}},
		}}}}
	}
	tests := []struct {
		name    string
		crd     *unstructured.Unstructured
		changed bool
		want    map[string]any
	}{
		{"webhook", webhook(), true, map[string]any{"strategy": "None"}},
		{"none", &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"conversion": map[string]any{"strategy": "None"}}}},
			false, map[string]any{"strategy": "None"}},
		{"no conversion", &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := controlplane.WithoutConversionWebhook(tt.crd); got != tt.changed {
				t.Errorf("changed = %v, want %v", got, tt.changed)
			}
			got, _, _ := unstructured.NestedMap(tt.crd.Object, "spec", "conversion")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("spec.conversion = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCRDSourceOf(t *testing.T) {
	generated := filepath.Join("..", "..", "..", "manifests", "crds")
	abs, err := filepath.Abs(generated)
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		generated:         "generated",
		abs + "/":         "generated",
		"/elsewhere/crds": "upstream",
	} {
		if got := controlplane.CRDSourceOf(dir, generated); got != want {
			t.Errorf("CRDSourceOf(%q) = %q, want %q", dir, got, want)
		}
	}
}
