package controlplane_test

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestTokenRequestPassesTokenReviewOnlyForItsAudience(t *testing.T) {
	n := testkit.NewNamespace(t)
	ns, admin := n.Name, n.Kube
	token, err := n.CP.ServiceAccountToken(t.Context(), ns, "nodeproxy", 600, "sandgate-authapi")
	if err != nil {
		t.Fatal(err)
	}
	review := func(audience string) *authenticationv1.TokenReviewStatus {
		tr, err := admin.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{audience}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token review: %v", err)
		}
		return &tr.Status
	}
	ok := review("sandgate-authapi")
	if !ok.Authenticated || ok.User.Username != "system:serviceaccount:"+ns+":nodeproxy" {
		t.Errorf("right audience: authenticated=%v user=%q error=%q", ok.Authenticated, ok.User.Username, ok.Error)
	}
	if other := review("someone-else"); other.Authenticated {
		t.Errorf("a token for sandgate-authapi passed review for another audience")
	}
}

func TestRBACIsEnforcedForWorkloadIdentities(t *testing.T) {
	n := testkit.NewNamespace(t)
	ns, admin := n.Name, n.Kube
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "claims-read"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{extensions.GroupVersion.Group}, Resources: []string{"sandboxclaims"},
			Verbs: []string{"get", "list", "watch"},
		}},
	}
	if _, err := admin.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nodeproxy-claims-read"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "nodeproxy", Namespace: ns}},
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := n.CP.ServiceAccountConfig(t.Context(), ns, "nodeproxy")
	if err != nil {
		t.Fatal(err)
	}
	client, err := sandboxapi.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.SandboxClaims(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("granted list refused: %v", err)
	}
	_, err = client.SandboxClaims(ns).Create(t.Context(), &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: "p"}},
	}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("create with read-only access: got %v, want Forbidden", err)
	}
	if _, err := client.Sandboxes(ns).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list of a resource never granted: got %v, want Forbidden", err)
	}
}
