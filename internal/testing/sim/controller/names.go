package controller

import (
	"fmt"
	"hash/fnv"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// Kinds that own objects, as they appear in ownerReferences.
const (
	kindSandbox  = "Sandbox"
	kindClaim    = "SandboxClaim"
	kindWarmPool = "SandboxWarmPool"
)

// CreatedBy is the value of agents.x-k8s.io/created-by on the Sandboxes
// the stand-in creates.
const CreatedBy = "sandgate-sim-controller"

// PVCProtectionFinalizer is what the API server's admission adds to every
// PersistentVolumeClaim; with no controller-manager running, the stand-in
// removes it once no pod uses the claim.
const PVCProtectionFinalizer = "kubernetes.io/pvc-protection"

// NameHash is the FNV-32a hash of name in lower-case hex: the value of
// agents.x-k8s.io/sandbox-name-hash for a Sandbox, and of
// agents.x-k8s.io/warm-pool-sandbox for a pool.
func NameHash(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("%08x", h.Sum32())
}

// Selector is a Sandbox's status.selector: its pods' hash label.
func Selector(sandbox string) string {
	return agents.LabelSandboxNameHash + "=" + NameHash(sandbox)
}

// ClaimName is the PersistentVolumeClaim made from a Sandbox's volume
// claim template: <template name>-<sandbox>, as in a StatefulSet. The pod
// mounts it as a volume named after the template.
func ClaimName(template, sandbox string) string { return template + "-" + sandbox }

func controllerRef(obj metav1.Object, gvk schema.GroupVersionKind) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               obj.GetName(),
		UID:                obj.GetUID(),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

func sandboxRef(sb *agents.Sandbox) metav1.OwnerReference {
	return controllerRef(sb, agents.GroupVersion.WithKind(kindSandbox))
}

func claimRef(c *extensions.SandboxClaim) metav1.OwnerReference {
	return controllerRef(c, extensions.GroupVersion.WithKind(kindClaim))
}

func poolRef(p *extensions.SandboxWarmPool) metav1.OwnerReference {
	return controllerRef(p, extensions.GroupVersion.WithKind(kindWarmPool))
}

// controlledBy reports whether obj's controller is the owner with uid.
func controlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == uid
}

// setController replaces obj's controller reference with ref and keeps
// its other owners.
func setController(obj metav1.Object, ref metav1.OwnerReference) {
	refs := []metav1.OwnerReference{ref}
	for _, r := range obj.GetOwnerReferences() {
		if r.Controller == nil || !*r.Controller {
			refs = append(refs, r)
		}
	}
	obj.SetOwnerReferences(refs)
}

// mergeInto copies src over dst, allocating dst when needed.
func mergeInto(dst *map[string]string, src map[string]string) {
	if len(src) == 0 {
		return
	}
	if *dst == nil {
		*dst = map[string]string{}
	}
	maps.Copy(*dst, src)
}

// mergePodMetadata merges a claim's additionalPodMetadata into a pod
// template's metadata.
func mergePodMetadata(dst *agents.PodMetadata, src agents.PodMetadata) {
	mergeInto(&dst.Labels, src.Labels)
	mergeInto(&dst.Annotations, src.Annotations)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func operatingMode(sb *agents.Sandbox) agents.OperatingMode {
	if sb.Spec.OperatingMode == "" {
		return agents.OperatingModeRunning
	}
	return sb.Spec.OperatingMode
}
