package clustertest

import (
	"fmt"
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

// GrantNodeProxy applies the node proxy's RBAC from manifests/daemonset to
// namespace ns, so tests run the node proxy with exactly the rights the
// manifests give it. Cluster-scoped objects get the namespace appended to
// their names, so tests in other namespaces do not collide.
func GrantNodeProxy(t testing.TB, kube kubernetes.Interface, ns string) {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := controlplane.ReadManifests(filepath.Join(root, "manifests", "daemonset"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	clusterName := func(name string) string { return name + "-" + ns }
	for _, obj := range objs {
		var err error
		switch obj.GetKind() {
		case "Role":
			var r rbacv1.Role
			if err = fromUnstructured(obj.Object, &r); err == nil {
				r.ObjectMeta = metav1.ObjectMeta{Name: r.Name, Namespace: ns}
				_, err = kube.RbacV1().Roles(ns).Create(ctx, &r, metav1.CreateOptions{})
			}
		case "RoleBinding":
			var b rbacv1.RoleBinding
			if err = fromUnstructured(obj.Object, &b); err == nil {
				b.ObjectMeta = metav1.ObjectMeta{Name: b.Name, Namespace: ns}
				retarget(b.Subjects, ns)
				_, err = kube.RbacV1().RoleBindings(ns).Create(ctx, &b, metav1.CreateOptions{})
			}
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err = fromUnstructured(obj.Object, &r); err == nil {
				r.ObjectMeta = metav1.ObjectMeta{Name: clusterName(r.Name)}
				_, err = kube.RbacV1().ClusterRoles().Create(ctx, &r, metav1.CreateOptions{})
			}
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			if err = fromUnstructured(obj.Object, &b); err == nil {
				b.ObjectMeta = metav1.ObjectMeta{Name: clusterName(b.Name)}
				b.RoleRef.Name = clusterName(b.RoleRef.Name)
				retarget(b.Subjects, ns)
				_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, &b, metav1.CreateOptions{})
			}
		}
		if err != nil {
			t.Fatalf("grant node proxy %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

func fromUnstructured(obj map[string]any, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into); err != nil {
		return fmt.Errorf("convert manifest: %w", err)
	}
	return nil
}

// retarget moves ServiceAccount subjects into namespace ns.
func retarget(subjects []rbacv1.Subject, ns string) {
	for i := range subjects {
		if subjects[i].Kind == rbacv1.ServiceAccountKind {
			subjects[i].Namespace = ns
		}
	}
}
