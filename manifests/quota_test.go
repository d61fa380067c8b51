package manifests_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// claimCount is the quota resource that counts SandboxClaims, one per
// account.
const claimCount corev1.ResourceName = "count/sandboxclaims.extensions.agents.x-k8s.io"

// TestEveryVariantBoundsAccounts: every variant (a kustomization of the
// whole platform, namespaces and auth API included) ships a ResourceQuota in the sandbox namespace on what signups create:
// claims, Sandboxes, pods, volumes and their storage.
func TestEveryVariantBoundsAccounts(t *testing.T) {
	want := []corev1.ResourceName{claimCount, "count/sandboxes.agents.x-k8s.io", "pods", "persistentvolumeclaims", "requests.storage"}
	variants := 0
	for _, dir := range kustomizationDirs(t) {
		objs := build(t, dir)
		if !wholePlatform(objs) {
			continue
		}
		variants++
		hard := corev1.ResourceList{}
		for _, q := range decodeAll[corev1.ResourceQuota](t, objs, "ResourceQuota", "", "") {
			if q.Namespace == sandboxNamespace {
				for k, v := range q.Spec.Hard {
					hard[k] = v
				}
			}
		}
		for _, r := range want {
			if v, ok := hard[r]; !ok || v.IsZero() {
				t.Errorf("%s: no ResourceQuota in %s bounds %s", dir, sandboxNamespace, r)
			}
		}
	}
	if variants == 0 {
		t.Fatal("no kustomization is the whole platform")
	}
}

// TestQuotaRefusesClaimsPastTheLimit applies the shipped quota, its claim
// count lowered to 1, to a namespace of the real API server: once the quota
// has counted a claim, the next is refused, so the resource name counts
// SandboxClaims (a misspelt one would bound nothing). The API server admits
// against its informer's copy of the quota, which may not hold a just-created
// quota yet: claims made before it does are not counted, so the test makes
// claims until the quota's status counts one.
func TestQuotaRefusesClaimsPastTheLimit(t *testing.T) {
	n := testkit.NewNamespace(t)
	ns, cs := n.Name, n.Kube
	qs := decodeAll[corev1.ResourceQuota](t, build(t, "quota"), "ResourceQuota", "", "")
	if len(qs) != 1 {
		t.Fatalf("manifests/quota renders %d ResourceQuotas, want 1", len(qs))
	}
	q := qs[0]
	q.Namespace = ns
	q.Spec.Hard[claimCount] = resource.MustParse("1")
	// No quota controller runs here: give the quota the status it would.
	testkit.CreateWithStatus(t, cs.CoreV1().ResourceQuotas(ns), q, func(created *corev1.ResourceQuota) {
		created.Status.Hard = created.Spec.Hard
		created.Status.Used = corev1.ResourceList{}
		for r := range created.Spec.Hard {
			created.Status.Used[r] = resource.MustParse("0")
		}
	})
	claims := n.SB.SandboxClaims(ns)
	made := 0
	claim := func() error {
		made++
		_, err := claims.Create(t.Context(), &extensions.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dsh-user-%d", made), Namespace: ns},
			Spec:       extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: "dsh-pool"}},
		}, metav1.CreateOptions{})
		return err
	}
	testkit.EventuallyNil(t, "the quota counts a claim", func() error {
		if err := claim(); err != nil {
			t.Fatalf("claim %d, within the quota, was refused: %v", made, err)
		}
		got, err := cs.CoreV1().ResourceQuotas(ns).Get(t.Context(), q.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if used := got.Status.Used[claimCount]; used.Value() != 1 {
			return fmt.Errorf("the quota counts %s claims after %d made", used.String(), made)
		}
		return nil
	})
	if err := claim(); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("the claim past the quota: got %v, want refused for exceeding the quota", err)
	}
}

// wholePlatform reports whether objs hold the namespaces and the auth API.
func wholePlatform(objs []*unstructured.Unstructured) bool {
	var namespaces, authapi bool
	for _, obj := range objs {
		namespaces = namespaces || obj.GetKind() == "Namespace"
		authapi = authapi || obj.GetKind() == "Deployment" && obj.GetName() == "authapi"
	}
	return namespaces && authapi
}
