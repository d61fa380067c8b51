package manifests_test

import (
	"fmt"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// The shipped namespaces and ServiceAccounts (manifests/namespace).
const (
	sandboxNamespace   = "sandgate"
	nodeproxyNamespace = "sandgate-node"
	authapiSA          = "system:serviceaccount:" + sandboxNamespace + ":authapi"
	nodeproxySA        = "system:serviceaccount:" + nodeproxyNamespace + ":nodeproxy"
)

// access is a request in a namespace, the sandbox namespace when empty.
type access struct {
	verb, group, resource, subresource, name, namespace string
}

func (a access) String() string {
	return fmt.Sprintf("%s %s/%s/%s %s in %q", a.verb, a.group, a.resource, a.subresource, a.name, a.ns())
}

func (a access) ns() string {
	if a.namespace == "" {
		return sandboxNamespace
	}
	return a.namespace
}

func allowed(t *testing.T, cs kubernetes.Interface, sa string, a access) bool {
	t.Helper()
	saNamespace := strings.Split(sa, ":")[2]
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: a.ns(), Verb: a.verb, Group: a.group, Resource: a.resource,
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
	cs, err := kubernetes.NewForConfig(testkit.ControlPlane(t).AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	const claims, sandboxes = "extensions.agents.x-k8s.io", "agents.x-k8s.io"
	tests := []struct {
		sa   string
		want bool
		a    access
	}{
		{nodeproxySA, true, access{verb: "watch", group: claims, resource: "sandboxclaims"}},
		{nodeproxySA, true, access{verb: "list", group: sandboxes, resource: "sandboxes"}},
		{nodeproxySA, true, access{verb: "watch", resource: "pods"}},
		{nodeproxySA, true, access{verb: "list", resource: "nodes"}},
		{nodeproxySA, false, access{verb: "get", resource: "pods", subresource: "log"}},
		{nodeproxySA, false, access{verb: "get", resource: "secrets", name: "sandgate-authapi-signing-keys"}},
		{nodeproxySA, false, access{verb: "list", resource: "secrets"}},
		{nodeproxySA, false, access{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"}},
		{nodeproxySA, false, access{verb: "get", resource: "secrets", name: "nodeproxy-tls", namespace: nodeproxyNamespace}},
		{nodeproxySA, false, access{verb: "list", resource: "pods", namespace: nodeproxyNamespace}},
		{nodeproxySA, false, access{verb: "list", resource: "pods", namespace: "default"}},
		{authapiSA, false, access{verb: "list", resource: "pods", namespace: nodeproxyNamespace}},
		{authapiSA, false, access{verb: "patch", resource: "daemonsets", group: "apps", namespace: nodeproxyNamespace}},
		{authapiSA, true, access{verb: "create", group: claims, resource: "sandboxclaims"}},
		{authapiSA, true, access{verb: "delete", group: claims, resource: "sandboxclaims"}},
		{authapiSA, true, access{verb: "patch", group: sandboxes, resource: "sandboxes"}},
		{authapiSA, true, access{verb: "update", group: "coordination.k8s.io", resource: "leases", name: "sandgate-authapi-leader"}},
		{authapiSA, true, access{verb: "get", resource: "secrets", name: "sandgate-authapi-signing-keys"}},
		{authapiSA, true, access{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"}},
		{authapiSA, false, access{verb: "get", resource: "secrets", name: "dsh-provider-keys"}},
		{authapiSA, false, access{verb: "list", resource: "secrets"}},
		{authapiSA, false, access{verb: "update", group: "coordination.k8s.io", resource: "leases", name: "other"}},
		{authapiSA, true, access{verb: "delete", group: "coordination.k8s.io", resource: "leases", name: "sandgate-recreate-dsh-bob"}},
		{authapiSA, true, access{verb: "get", group: "coordination.k8s.io", resource: "leases", name: "sandgate-recreate-dsh-bob"}},
		{authapiSA, false, access{verb: "list", group: "coordination.k8s.io", resource: "leases"}},
		{authapiSA, false, access{verb: "create", group: sandboxes, resource: "sandboxes"}},
		{authapiSA, false, access{verb: "get", resource: "pods", subresource: "log"}},
		// The claims it creates name a warm pool, whose template it must not change.
		{authapiSA, false, access{verb: "patch", group: claims, resource: "sandboxtemplates"}},
		{authapiSA, false, access{verb: "patch", group: claims, resource: "sandboxwarmpools"}},
		{authapiSA, false, access{verb: "create", group: claims, resource: "sandboxtemplates"}},
	}
	// It deletes terminated sandbox pods (admission narrows which) and
	// records Events, in its own namespace only.
	for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "deletecollection"} {
		tests = append(tests, struct {
			sa   string
			want bool
			a    access
		}{authapiSA, false, access{verb: verb, resource: "pods"}})
	}
	tests = append(tests, []struct {
		sa   string
		want bool
		a    access
	}{
		{authapiSA, true, access{verb: "delete", resource: "pods"}},
		{authapiSA, false, access{verb: "delete", resource: "pods", namespace: nodeproxyNamespace}},
		{authapiSA, true, access{verb: "create", resource: "events"}},
		{authapiSA, false, access{verb: "create", resource: "events", namespace: nodeproxyNamespace}},
		{authapiSA, false, access{verb: "delete", resource: "events"}},
	}...)
	for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
		for _, ns := range []string{sandboxNamespace, nodeproxyNamespace} {
			for _, r := range []access{
				{group: claims, resource: "sandboxclaims"}, {group: sandboxes, resource: "sandboxes"},
				{resource: "pods"}, {resource: "nodes"}, {resource: "secrets"}, {resource: "configmaps"},
				{group: "coordination.k8s.io", resource: "leases"}, {group: "apps", resource: "daemonsets"},
			} {
				r.verb, r.namespace = verb, ns
				tests = append(tests, struct {
					sa   string
					want bool
					a    access
				}{nodeproxySA, false, r})
			}
		}
	}
	for _, tt := range tests {
		if got := allowed(t, cs, tt.sa, tt.a); got != tt.want {
			t.Errorf("%s may %s: got %v, want %v", tt.sa, tt.a, got, tt.want)
		}
	}
}
