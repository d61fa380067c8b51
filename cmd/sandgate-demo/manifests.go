package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// resources maps the kinds the sandbox manifests hold to their resources.
var resources = map[schema.GroupVersionKind]string{
	{Version: "v1", Kind: "ConfigMap"}:                                                 "configmaps",
	{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Kind: "SandboxTemplate"}: "sandboxtemplates",
	{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Kind: "SandboxWarmPool"}: "sandboxwarmpools",
}

// apply creates objs in namespace, replacing the namespace they name.
func apply(ctx context.Context, dyn dynamic.Interface, namespace string, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		res, ok := resources[gvk]
		if !ok {
			return fmt.Errorf("manifest %s %s: kind not supported by the demo", gvk.Kind, obj.GetName())
		}
		obj.SetNamespace(namespace)
		client := dyn.Resource(gvk.GroupVersion().WithResource(res)).Namespace(namespace)
		if _, err := client.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
	}
	return nil
}
