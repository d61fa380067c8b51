package manifests_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// authapiPolicy is the ValidatingAdmissionPolicy of manifests/admission.
const authapiPolicy = "sandgate-authapi-writes"

// TestAuthAPIWritesAreLimitedByAdmission applies the shipped auth API
// RBAC, ConfigMap and admission policy to the real API server and, as the
// auth API's ServiceAccount (impersonated), makes every write the auth API
// makes, which pass, and the writes its RBAC would allow but it never
// makes, which the policy refuses: above all a patch of a Sandbox's pod
// template to a privileged container.
func TestAuthAPIWritesAreLimitedByAdmission(t *testing.T) {
	admin, authapi := applyAuthAPIAdmission(t)
	ctx := t.Context()
	sandboxes, claims := authapi.sb.Sandboxes(sandboxNamespace), authapi.sb.SandboxClaims(sandboxNamespace)
	adminSandboxes, adminClaims := admin.sb.Sandboxes(sandboxNamespace), admin.sb.SandboxClaims(sandboxNamespace)

	sb, err := adminSandboxes.Create(ctx, testSandbox("admission-test"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = adminSandboxes.Delete(context.Background(), sb.Name, metav1.DeleteOptions{}) })
	foreign, err := adminClaims.Create(ctx, &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "hand-made", Namespace: sandboxNamespace},
		Spec:       extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: "dsh-pool"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = adminClaims.Delete(context.Background(), foreign.Name, metav1.DeleteOptions{}) })

	privileged := []byte(`[{"op":"add","path":"/spec/podTemplate/spec/containers/0/securityContext","value":{"privileged":true}}]`)
	waitForPolicy(t, authapiPolicy, func() error {
		_, err := sandboxes.Patch(ctx, sb.Name, types.JSONPatchType, privileged, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})

	const user = "admission-bob"
	claimName := "dsh-" + user
	t.Cleanup(func() { _ = adminClaims.Delete(context.Background(), claimName, metav1.DeleteOptions{}) })
	merge := func(patch string) func() error {
		return func() error {
			_, err := claims.Patch(ctx, claimName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		}
	}
	sandboxMerge := func(patch string) func() error {
		return func() error {
			_, err := sandboxes.Patch(ctx, sb.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		}
	}
	create := func(mutate func(*extensions.SandboxClaim)) func() error {
		return func() error {
			c := accountClaim(user)
			mutate(c)
			_, err := claims.Create(ctx, c, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
	}
	// In order: the real create comes first, the deletes last.
	tests := []struct {
		name    string
		write   func() error
		allowed bool
	}{
		{"create the account claim as newClaim builds it", func() error {
			_, err := claims.Create(ctx, accountClaim(user), metav1.CreateOptions{})
			return err
		}, true},
		{"create a claim with env", create(func(c *extensions.SandboxClaim) {
			c.Spec.Env = []corev1.EnvVar{{Name: "LD_PRELOAD", Value: "/x.so"}}
		}), false},
		{"create a claim on another warm pool", create(func(c *extensions.SandboxClaim) { c.Spec.WarmPoolRef.Name = "other-pool" }), false},
		{"create a claim with its own volumes", create(func(c *extensions.SandboxClaim) {
			c.Spec.VolumeClaimTemplates = []agents.PersistentVolumeClaimTemplate{{Metadata: agents.VolumeClaimMetadata{Name: "extra"}}}
		}), false},
		{"create a claim with a lifecycle", create(func(c *extensions.SandboxClaim) {
			c.Spec.Lifecycle = &extensions.Lifecycle{ShutdownPolicy: agents.ShutdownPolicyRetain}
		}), false},
		{"create a claim with another pod label", create(func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Labels["app.kubernetes.io/name"] = "sandgate-nodeproxy"
		}), false},
		{"create a claim with a pod annotation", create(func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/dsh": "unconfined"}
		}), false},
		{"create a claim whose pod label names another user", create(func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Labels[account.PodLabelUser] = "alice"
		}), false},
		{"create a claim named for another user", create(func(c *extensions.SandboxClaim) { c.Name = "dsh-alice" }), false},
		{"create an unmanaged claim", create(func(c *extensions.SandboxClaim) { delete(c.Labels, account.LabelManagedBy) }), false},
		{"create a claim with a foreign annotation", create(func(c *extensions.SandboxClaim) { c.Annotations["example.com/x"] = "y" }), false},

		{"revoke a session", merge(`{"metadata":{"annotations":{"sandgate.io/session-epoch":"7","sandgate.io/revoked-sessions":"[]"}}}`), true},
		{"record a used entry code", merge(`{"metadata":{"annotations":{"sandgate.io/used-entry-codes":"{}"}}}`), true},
		{"rotate the bearer token", merge(`{"metadata":{"annotations":{"aaas.example.com/token-sha256":"` + strings.Repeat("ab", 32) + `"}}}`), true},
		{"change a claim's warm pool", merge(`{"spec":{"warmPoolRef":{"name":"other-pool"}}}`), false},
		{"add env to a claim", merge(`{"spec":{"env":[{"name":"A","value":"b"}]}}`), false},
		{"change a claim's user label", merge(`{"metadata":{"labels":{"aaas.example.com/user":"alice"}}}`), false},
		{"set a foreign annotation on a claim", merge(`{"metadata":{"annotations":{"agents.x-k8s.io/sandbox-name":"someone-elses"}}}`), false},
		{"add a finalizer to a claim", merge(`{"metadata":{"finalizers":["example.com/hold"]}}`), false},
		{"annotate a hand-made claim", func() error {
			_, err := claims.Patch(ctx, foreign.Name, types.MergePatchType, []byte(`{"metadata":{"annotations":{"sandgate.io/x":"y"}}}`), metav1.PatchOptions{})
			return err
		}, false},

		{"suspend a sandbox", sandboxMerge(`{"spec":{"operatingMode":"Suspended"}}`), true},
		{"wake a sandbox", sandboxMerge(`{"spec":{"operatingMode":"Running"}}`), true},
		{"annotate a sandbox under its own prefix", sandboxMerge(`{"metadata":{"annotations":{"sandgate.io/note":"x"}}}`), true},
		{"make a sandbox's container privileged", func() error {
			_, err := sandboxes.Patch(ctx, sb.Name, types.JSONPatchType, privileged, metav1.PatchOptions{})
			return err
		}, false},
		{"change a sandbox's image", sandboxMerge(`{"spec":{"podTemplate":{"spec":{"containers":[{"name":"dsh","image":"evil:latest"}]}}}}`), false},
		{"mount a host path into a sandbox", sandboxMerge(`{"spec":{"podTemplate":{"spec":{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}}}`), false},
		{"label a sandbox's pods", sandboxMerge(`{"spec":{"podTemplate":{"metadata":{"labels":{"app.kubernetes.io/name":"sandgate-nodeproxy"}}}}}`), false},
		{"change a sandbox's service", sandboxMerge(`{"spec":{"service":false}}`), false},
		{"set a sandbox's shutdown time", sandboxMerge(`{"spec":{"shutdownTime":"2030-01-01T00:00:00Z"}}`), false},
		{"label a sandbox", sandboxMerge(`{"metadata":{"labels":{"x":"y"}}}`), false},
		{"set a foreign annotation on a sandbox", sandboxMerge(`{"metadata":{"annotations":{"agents.x-k8s.io/pod-name":"other"}}}`), false},

		{"delete a hand-made claim", func() error {
			return claims.Delete(ctx, foreign.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}, false},
		{"delete the account claim", func() error { return claims.Delete(ctx, claimName, metav1.DeleteOptions{}) }, true},
	}
	for _, tt := range tests {
		expectVerdict(t, tt.name, authapiPolicy, tt.allowed, tt.write())
	}
	// Upstream's CRD makes volumeClaimTemplates immutable for everyone (a
	// CEL rule on spec), which refuses the change before the policy is
	// asked; either refusal will do.
	if err := sandboxMerge(`{"spec":{"volumeClaimTemplates":[{"metadata":{"name":"x"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Ti"}}}}]}}`)(); err == nil {
		t.Error("the auth API changed a sandbox's volumes")
	}

	// The policy binds the auth API only: an administrator still may.
	if _, err := adminSandboxes.Patch(ctx, sb.Name, types.JSONPatchType, privileged, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("an administrator's patch was refused: %v", err)
	}
}

// waitForPolicy waits until the API server enforces the freshly applied
// policy, which it loads asynchronously: until write is refused by it.
func waitForPolicy(t *testing.T, policy string, write func() error) {
	t.Helper()
	testkit.WithinNil(t, time.Minute, "the API server enforcing "+policy, func() error {
		if err := write(); !refusedBy(err, policy) {
			return fmt.Errorf("answered %v", err)
		}
		return nil
	})
}

// expectVerdict checks the answer err to the write named name: nil if the
// write is allowed, else a refusal by policy.
func expectVerdict(t *testing.T, name, policy string, allowed bool, err error) {
	t.Helper()
	switch {
	case allowed && err != nil:
		t.Errorf("%s: refused, want allowed: %v", name, err)
	case !allowed && err == nil:
		t.Errorf("%s: allowed, want refused", name)
	case !allowed && !refusedBy(err, policy):
		t.Errorf("%s: refused for another reason than %s: %v", name, policy, err)
	}
}

// refusedBy reports whether err is a refusal by the named admission policy.
func refusedBy(err error, policy string) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && strings.Contains(status.Status().Message, "ValidatingAdmissionPolicy '"+policy+"'")
}

// accountClaim is the claim internal/accountpath/authapi's newClaim builds for user,
// with the shipped CLAIM_PREFIX and WARM_POOL.
func accountClaim(user string) *extensions.SandboxClaim {
	hash := [32]byte{1}
	return &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      account.ClaimName("dsh-", user),
			Namespace: sandboxNamespace,
			Labels:    map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: user},
			Annotations: map[string]string{
				account.LabelManagedBy:         account.ManagedByValue,
				account.AnnotationTokenHash:    hex.EncodeToString(hash[:]),
				account.AnnotationSessionEpoch: "1",
			},
		},
		Spec: extensions.SandboxClaimSpec{
			WarmPoolRef:           extensions.WarmPoolRef{Name: "dsh-pool"},
			AdditionalPodMetadata: agents.PodMetadata{Labels: map[string]string{account.PodLabelUser: user}},
		},
	}
}

// testSandbox is a Sandbox such as the controller creates from the shipped
// template.
func testSandbox(name string) *agents.Sandbox {
	return &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sandboxNamespace},
		Spec: agents.SandboxSpec{
			OperatingMode: agents.OperatingModeRunning,
			Service:       ptr.To(true),
			PodTemplate: agents.PodTemplate{
				Metadata: agents.PodMetadata{Labels: map[string]string{"app.kubernetes.io/name": "dsh-web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "dsh", Image: "dsh-web:latest",
					SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)},
				}}},
			},
		},
	}
}

// TestAuthAPIPolicyNamesEverySandboxField: the policy keeps every spec
// field of the Sandbox CRD but operatingMode as it was, so a field added
// to the CRD cannot become one the auth API may change unnoticed.
func TestAuthAPIPolicyNamesEverySandboxField(t *testing.T) {
	objs := build(t, "crds")
	var policy string
	for _, obj := range build(t, "admission") {
		if obj.GetKind() == "ValidatingAdmissionPolicy" && obj.GetName() == authapiPolicy {
			validations, _, _ := unstructured.NestedSlice(obj.Object, "spec", "validations")
			for _, v := range validations {
				policy += v.(map[string]any)["expression"].(string) + "\n"
			}
		}
	}
	if policy == "" {
		t.Fatalf("manifests/admission has no ValidatingAdmissionPolicy %s", authapiPolicy)
	}
	fields := 0
	for _, crd := range objs {
		if crd.GetName() != "sandboxes.agents.x-k8s.io" {
			continue
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			props, _, _ := unstructured.NestedMap(v.(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties")
			for field := range props {
				if field == "operatingMode" {
					continue
				}
				fields++
				if want := "object.spec.?" + field + " == oldObject.spec.?" + field; !strings.Contains(policy, want) {
					t.Errorf("the policy lets the auth API change Sandbox spec.%s: it lacks %q", field, want)
				}
			}
		}
	}
	if fields == 0 {
		t.Fatal("manifests/crds has no Sandbox spec fields")
	}
}

// podDeletesPolicy is the policy that narrows the auth API's pod deletes.
const podDeletesPolicy = "sandgate-authapi-pod-deletes"

// TestAuthAPIDeletesOnlyTerminatedSandboxPods applies the shipped RBAC
// and admission policies and, as the auth API's ServiceAccount, deletes
// (dry run) pods: a Failed or Succeeded pod a Sandbox controls that
// carries the user label passes; a running one, one without a Sandbox
// owner and one without the user label are refused.
func TestAuthAPIDeletesOnlyTerminatedSandboxPods(t *testing.T) {
	admin, authapi := applyAuthAPIAdmission(t)
	ctx := t.Context()
	sandboxOwner := metav1.OwnerReference{APIVersion: agents.GroupVersion.String(), Kind: "Sandbox", Name: "sb", UID: "uid-sb", Controller: ptr.To(true)}
	userLabel := map[string]string{account.PodLabelUser: "bob"}
	pod := func(name string, phase corev1.PodPhase, owners []metav1.OwnerReference, labels map[string]string) string {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sandboxNamespace, OwnerReferences: owners, Labels: labels},
			Spec: corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				Containers: []corev1.Container{{Name: "app", Image: "app:latest", SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				}}},
			},
		}
		t.Cleanup(func() {
			_ = admin.kube.CoreV1().Pods(sandboxNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		testkit.CreateWithStatus(t, admin.kube.CoreV1().Pods(sandboxNamespace), p, func(created *corev1.Pod) { created.Status.Phase = phase })
		return name
	}
	del := func(name string) error {
		return authapi.kube.CoreV1().Pods(sandboxNamespace).Delete(ctx, name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	}
	running := pod("sandbox-running", corev1.PodRunning, []metav1.OwnerReference{sandboxOwner}, userLabel)
	waitForPolicy(t, podDeletesPolicy, func() error { return del(running) })
	for _, tt := range []struct {
		name    string
		pod     string
		allowed bool
	}{
		{"failed sandbox pod", pod("sandbox-failed", corev1.PodFailed, []metav1.OwnerReference{sandboxOwner}, userLabel), true},
		{"succeeded sandbox pod", pod("sandbox-succeeded", corev1.PodSucceeded, []metav1.OwnerReference{sandboxOwner}, userLabel), true},
		{"running sandbox pod", running, false},
		{"failed pod without a Sandbox owner", pod("loose-failed", corev1.PodFailed, nil, userLabel), false},
		{"failed pod owned by something else", pod("rs-failed", corev1.PodFailed, []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "uid-rs", Controller: ptr.To(true)}}, userLabel), false},
		{"failed sandbox pod without the user label", pod("unlabelled-failed", corev1.PodFailed, []metav1.OwnerReference{sandboxOwner}, nil), false},
	} {
		expectVerdict(t, tt.name, podDeletesPolicy, tt.allowed, del(tt.pod))
	}
}

// clientSet is one identity's core and sandbox clients.
type clientSet struct {
	kube kubernetes.Interface
	sb   *sandboxapi.Client
}

// applyAuthAPIAdmission applies the auth API's RBAC, ConfigMap and the
// admission policies to the real API server, without its workloads, and
// returns the admin's clients and the auth API's (its ServiceAccount
// impersonated).
func applyAuthAPIAdmission(t *testing.T) (admin, authapi clientSet) {
	t.Helper()
	a := newApplier(t)
	for _, dir := range []string{"namespace", "authapi", "admission"} {
		for _, obj := range build(t, dir) {
			if obj.GetKind() == "Deployment" || obj.GetKind() == "PodDisruptionBudget" || obj.GetKind() == "Service" {
				continue
			}
			if err := a.apply(t, obj, false); err != nil {
				t.Fatalf("apply %s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	admin.kube, admin.sb = testkit.Clients(t, testkit.ControlPlane(t).AdminConfig())
	authapi.kube, authapi.sb = testkit.Clients(t, asAuthAPI(t))
	return admin, authapi
}

// asAuthAPI is the admin config impersonating the auth API's
// ServiceAccount, with the groups the API server gives it.
func asAuthAPI(t *testing.T) *rest.Config {
	c := rest.CopyConfig(testkit.ControlPlane(t).AdminConfig())
	c.Impersonate = rest.ImpersonationConfig{
		UserName: authapiSA,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + sandboxNamespace, "system:authenticated"},
	}
	return c
}
