package controlplane

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs creates every CustomResourceDefinition in dir's YAML files and
// waits until each is Established.
func (c *ControlPlane) installCRDs(ctx context.Context, dir string) error {
	crds, err := readCRDs(dir)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(c.AdminConfig())
	if err != nil {
		return fmt.Errorf("build dynamic client: %w", err)
	}
	client := dyn.Resource(crdResource)
	for _, crd := range crds {
		if _, err := client.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, client, crd.GetName()); err != nil {
			return err
		}
	}
	c.log.Info("CRDs established", "count", len(crds), "dir", dir)
	return nil
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
