package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// TemplateName is the SandboxTemplate CreatePool makes.
const TemplateName = "dsh"

// CreatePool creates, in namespace, the SandboxTemplate of the agent app
// stand-in (trusting the Host names in trustedHosts, as DSH_TRUSTED_HOSTS)
// and a SandboxWarmPool called pool of replicas spares on it, for tests and
// benchmarks that do not apply manifests/sandbox.
func CreatePool(ctx context.Context, sb *sandboxapi.Client, namespace, pool string, replicas int32, trustedHosts string) error {
	tmpl := &extensions.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: TemplateName},
		Spec: extensions.SandboxTemplateSpec{
			PodTemplate: agents.PodTemplate{
				Metadata: agents.PodMetadata{Labels: map[string]string{"app": "dsh"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "dsh", Image: "example/dsh:1",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 3080, Protocol: corev1.ProtocolTCP}},
					Env:   []corev1.EnvVar{{Name: "DSH_TRUSTED_HOSTS", Value: trustedHosts}},
				}}},
			},
			VolumeClaimTemplates: []agents.PersistentVolumeClaimTemplate{{
				Metadata: agents.VolumeClaimMetadata{Name: "dsh-home"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
			Service: ptr.To(true),
		},
	}
	if _, err := sb.SandboxTemplates(namespace).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create template: %w", err)
	}
	wp := &extensions.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec:       extensions.SandboxWarmPoolSpec{Replicas: replicas, SandboxTemplateRef: extensions.TemplateRef{Name: TemplateName}},
	}
	if _, err := sb.SandboxWarmPools(namespace).Create(ctx, wp, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create warm pool: %w", err)
	}
	return nil
}
