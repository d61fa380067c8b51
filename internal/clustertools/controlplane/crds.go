package controlplane

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs creates every CustomResourceDefinition in dir's YAML files,
// with conversion strategy None in place of Webhook (WithoutConversionWebhook),
// and waits until each is Established.
func (c *ControlPlane) installCRDs(ctx context.Context, dir, source string) error {
	crds, err := readCRDs(dir)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(c.AdminConfig())
	if err != nil {
		return fmt.Errorf("build dynamic client: %w", err)
	}
	client := dyn.Resource(crdResource)
	var converted []string
	for _, crd := range crds {
		if WithoutConversionWebhook(crd) {
			converted = append(converted, crd.GetName())
		}
		if _, err := client.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
		}
	}
	if len(converted) > 0 {
		c.log.Info("CRD conversion Webhook replaced by None, as for every CRD that names a webhook: none runs here (other versions are served unconverted; sandgate uses v1beta1)",
			"crds", converted)
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, client, crd.GetName()); err != nil {
			return err
		}
	}
	attrs := []any{"count", len(crds), "dir", dir}
	if source != "" {
		attrs = append(attrs, "source", source)
	}
	c.log.Info("CRDs established", attrs...)
	return nil
}

// WithoutConversionWebhook sets crd's spec.conversion to strategy None when
// it names a conversion webhook, and reports whether it did. Upstream
// agent-sandbox's v0.5 CRDs point at a webhook Service of its controller's
// deployment; without it, every read of a version other than the stored
// one fails. With None the API server serves each version by rewriting
// apiVersion only, which is right for the one version sandgate uses.
func WithoutConversionWebhook(crd *unstructured.Unstructured) bool {
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	if strategy != "Webhook" {
		return false
	}
	_ = unstructured.SetNestedMap(crd.Object, map[string]any{"strategy": "None"}, "spec", "conversion")
	return true
}

// CRDSourceOf labels a CRD directory for the log: "generated" when it is
// generated, the repository's manifests/crds, else "upstream".
func CRDSourceOf(dir, generated string) string {
	a, errA := filepath.Abs(dir)
	b, errB := filepath.Abs(generated)
	if errA == nil && errB == nil && filepath.Clean(a) == filepath.Clean(b) {
		return "generated"
	}
	return "upstream"
}

func waitEstablished(ctx context.Context, client dynamic.ResourceInterface, name string) error {
	for {
		obj, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get CRD %s: %w", name, err)
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, raw := range conds {
			cond, _ := raw.(map[string]any)
			if cond["type"] == "Established" && cond["status"] == "True" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for CRD %s to be Established: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// readCRDs returns the CustomResourceDefinitions among dir's manifests.
func readCRDs(dir string) ([]*unstructured.Unstructured, error) {
	objs, err := ReadManifests(dir)
	if err != nil {
		return nil, err
	}
	var crds []*unstructured.Unstructured
	for _, obj := range objs {
		if obj.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, obj)
		}
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition in %s", dir)
	}
	return crds, nil
}
