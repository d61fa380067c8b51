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

// resource is how the demo creates one kind.
type resource struct {
	name       string
	namespaced bool
}

// resources maps the kinds the demo applies to their resources: the
// sandbox manifests, and the identities and config of the auth API and
// node proxy manifests.
var resources = map[schema.GroupVersionKind]resource{
	{Version: "v1", Kind: "Namespace"}:                                                 {"namespaces", false},
	{Version: "v1", Kind: "ConfigMap"}:                                                 {"configmaps", true},
	{Version: "v1", Kind: "Secret"}:                                                    {"secrets", true},
	{Version: "v1", Kind: "ServiceAccount"}:                                            {"serviceaccounts", true},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}:                  {"roles", true},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}:           {"rolebindings", true},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}:           {"clusterroles", false},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}:    {"clusterrolebindings", false},
	{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"}:                 {"priorityclasses", false},
	{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Kind: "SandboxTemplate"}: {"sandboxtemplates", true},
	{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Kind: "SandboxWarmPool"}: {"sandboxwarmpools", true},
}

// platformKinds are the kinds of the auth API and node proxy manifests the
// demo replaces with local processes instead of applying.
var platformKinds = map[string]bool{
	"Deployment": true, "DaemonSet": true, "Service": true, "PodDisruptionBudget": true, "NetworkPolicy": true,
}

// applicable keeps the objects the demo applies, dropping the workloads
// and Services it runs as processes and forwarders.
func applicable(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if !platformKinds[o.GetKind()] {
			out = append(out, o)
		}
	}
	return out
}

// apply creates the namespaces objs live in, then objs.
func apply(ctx context.Context, dyn dynamic.Interface, objs []*unstructured.Unstructured) error {
	namespaces := map[string]bool{}
	for _, obj := range objs {
		if ns := obj.GetNamespace(); ns != "" && !namespaces[ns] {
			namespaces[ns] = true
			o := &unstructured.Unstructured{}
			o.SetAPIVersion("v1")
			o.SetKind("Namespace")
			o.SetName(ns)
			if err := create(ctx, dyn, o); err != nil {
				return err
			}
		}
	}
	for _, obj := range objs {
		if err := create(ctx, dyn, obj); err != nil {
			return err
		}
	}
	return nil
}

// create creates obj, unless it exists.
func create(ctx context.Context, dyn dynamic.Interface, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	res, ok := resources[gvk]
	if !ok {
		return fmt.Errorf("manifest %s %s: kind not supported by the demo", gvk.Kind, obj.GetName())
	}
	var client dynamic.ResourceInterface = dyn.Resource(gvk.GroupVersion().WithResource(res.name))
	if res.namespaced {
		client = dyn.Resource(gvk.GroupVersion().WithResource(res.name)).Namespace(obj.GetNamespace())
	}
	if _, err := client.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	return nil
}

// relocate moves every object in namespace from, and every binding's
// ServiceAccount subject there, to namespace to: --namespace runs the
// sandboxes and the auth API elsewhere than the manifests say, and leaves
// the node proxies' namespace as it is.
func relocate(objs []*unstructured.Unstructured, from, to string) {
	for _, obj := range objs {
		if obj.GetNamespace() == from {
			obj.SetNamespace(to)
		}
		subjects, ok, _ := unstructured.NestedSlice(obj.Object, "subjects")
		if !ok {
			continue
		}
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" && m["namespace"] == from {
				m["namespace"] = to
			}
		}
		_ = unstructured.SetNestedSlice(obj.Object, subjects, "subjects")
	}
}
