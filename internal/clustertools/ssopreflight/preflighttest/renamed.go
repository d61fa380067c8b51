// Package preflighttest holds what tests that apply the SSO variant for the
// preflight share. Tests only.
package preflighttest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Kinds are the SSO variant's objects the preflight reads; the
// cluster-scoped rest would be shared between the tests that apply it.
var Kinds = []string{"Namespace", "ConfigMap", "Service", "Ingress", "NetworkPolicy", "DaemonSet", "Deployment"}

// Renamed keeps the objects of Kinds and moves them, and every reference
// by name (namespace selectors), from the shipped namespaces sandgate-node
// and sandgate to names[from].
func Renamed(objs []*unstructured.Unstructured, names map[string]string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		if !slices.Contains(Kinds, obj.GetKind()) {
			continue
		}
		data, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		s := string(data)
		for _, from := range []string{"sandgate-node", "sandgate"} {
			s = strings.ReplaceAll(s, `"`+from+`"`, `"`+names[from]+`"`)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return nil, fmt.Errorf("decode renamed %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}
