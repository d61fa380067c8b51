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
	{Version: "v1", Kind: "ConfigMap"}:                                                 {"configmaps", true},
	{Version: "v1", Kind: "Secret"}:                                                    {"secrets", true},
	{Version: "v1", Kind: "ServiceAccount"}:                                            {"serviceaccounts", true},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}:                  {"roles", true},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}:           {"rolebindings", true},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}:           {"clusterroles", false},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}:    {"clusterrolebindings", false},
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

// apply creates objs, moving namespaced objects and ServiceAccount
// subjects into namespace.
func apply(ctx context.Context, dyn dynamic.Interface, namespace string, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		res, ok := resources[gvk]
		if !ok {
			return fmt.Errorf("manifest %s %s: kind not supported by the demo", gvk.Kind, obj.GetName())
		}
		obj = obj.DeepCopy()
		relocateSubjects(obj, namespace)
		var client dynamic.ResourceInterface = dyn.Resource(gvk.GroupVersion().WithResource(res.name))
		if res.namespaced {
			obj.SetNamespace(namespace)
			client = dyn.Resource(gvk.GroupVersion().WithResource(res.name)).Namespace(namespace)
		}
		if _, err := client.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
	}
	return nil
}

// relocateSubjects points a binding's ServiceAccount subjects at namespace.
func relocateSubjects(obj *unstructured.Unstructured, namespace string) {
	subjects, ok, _ := unstructured.NestedSlice(obj.Object, "subjects")
	if !ok {
		return
	}
	for _, s := range subjects {
		if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" {
			m["namespace"] = namespace
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, subjects, "subjects")
}

// configMapData returns the data of the ConfigMap called name among objs.
func configMapData(objs []*unstructured.Unstructured, name string) (map[string]string, error) {
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" || o.GetName() != name {
			continue
		}
		data, _, err := unstructured.NestedStringMap(o.Object, "data")
		if err != nil {
			return nil, fmt.Errorf("ConfigMap %s: %w", name, err)
		}
		return data, nil
	}
	return nil, fmt.Errorf("no ConfigMap %s in the manifests", name)
}
