package manifests_test

import (
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

type access struct {
	verb, group, resource, subresource, name string
}

func (a access) String() string {
	return fmt.Sprintf("%s %s/%s/%s %s", a.verb, a.group, a.resource, a.subresource, a.name)
}

func allowed(t *testing.T, cs kubernetes.Interface, sa string, a access) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:sandgate:" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:sandgate", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: "sandgate", Verb: a.verb, Group: a.group, Resource: a.resource,
			Subresource: a.subresource, Name: a.name,
		},
	}}
	res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("subject access review: %v", err)
	}
	return res.Status.Allowed
}

func TestRBACIsLeastPrivilege(t *testing.T) {
	a := newApplier(t)
	for _, dir := range []string{"namespace", "authapi", "daemonset"} {
		for _, obj := range build(t, dir) {
			if obj.GetKind() != "Namespace" && obj.GetKind() != "ServiceAccount" &&
				obj.GetKind() != "Role" && obj.GetKind() != "RoleBinding" &&
				obj.GetKind() != "ClusterRole" && obj.GetKind() != "ClusterRoleBinding" {
				continue
			}
			if err := a.apply(t, obj, false); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("apply %s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	cs, err := kubernetes.NewForConfig(cluster.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	const claims, sandboxes = "extensions.agents.x-k8s.io", "agents.x-k8s.io"
	tests := []struct {
		sa   string
		want bool
		a    access
	}{
		{"nodeproxy", true, access{verb: "watch", group: claims, resource: "sandboxclaims"}},
		{"nodeproxy", true, access{verb: "list", group: sandboxes, resource: "sandboxes"}},
		{"nodeproxy", true, access{verb: "watch", resource: "pods"}},
		{"nodeproxy", true, access{verb: "list", resource: "nodes"}},
		{"nodeproxy", false, access{verb: "get", resource: "pods", subresource: "log"}},
		{"nodeproxy", false, access{verb: "get", resource: "secrets", name: "sandgate-authapi-signing-keys"}},
		{"nodeproxy", false, access{verb: "list", resource: "secrets"}},
		{"nodeproxy", false, access{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"}},
		{"authapi", true, access{verb: "create", group: claims, resource: "sandboxclaims"}},
		{"authapi", true, access{verb: "delete", group: claims, resource: "sandboxclaims"}},
		{"authapi", true, access{verb: "patch", group: sandboxes, resource: "sandboxes"}},
		{"authapi", true, access{verb: "update", group: "coordination.k8s.io", resource: "leases", name: "sandgate-authapi-leader"}},
		{"authapi", true, access{verb: "get", resource: "secrets", name: "sandgate-authapi-signing-keys"}},
		{"authapi", true, access{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"}},
		{"authapi", false, access{verb: "get", resource: "secrets", name: "dsh-provider-keys"}},
		{"authapi", false, access{verb: "list", resource: "secrets"}},
		{"authapi", false, access{verb: "update", group: "coordination.k8s.io", resource: "leases", name: "other"}},
		{"authapi", false, access{verb: "create", group: sandboxes, resource: "sandboxes"}},
		{"authapi", false, access{verb: "get", resource: "pods", subresource: "log"}},
	}
	for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
		tests = append(tests, struct {
			sa   string
			want bool
			a    access
		}{"authapi", false, access{verb: verb, resource: "pods"}})
	}
	for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
		for _, r := range []access{
			{group: claims, resource: "sandboxclaims"}, {group: sandboxes, resource: "sandboxes"},
			{resource: "pods"}, {resource: "nodes"}, {resource: "secrets"}, {resource: "configmaps"},
			{group: "coordination.k8s.io", resource: "leases"},
		} {
			r.verb = verb
			tests = append(tests, struct {
				sa   string
				want bool
				a    access
			}{"nodeproxy", false, r})
		}
	}
	for _, tt := range tests {
		if got := allowed(t, cs, tt.sa, tt.a); got != tt.want {
			t.Errorf("%s may %s: got %v, want %v", tt.sa, tt.a, got, tt.want)
		}
	}
}
