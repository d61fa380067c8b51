package manifests_test

import (
	"path"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestHopKeyRequired: in every variant that deploys node proxies, the
// nodeproxy container reads HOP_KEY_FILE from a mount of the
// nodeproxy-hop-key Secret, and the Secret is required: a node proxy never
// runs trusting hops by source address (which, with hostNetwork, anything
// on a node's address could claim).
func TestHopKeyRequired(t *testing.T) {
	eachNodeproxy(t, func(t *testing.T, ds *appsv1.DaemonSet, objs []*unstructured.Unstructured) {
		c := nodeproxyContainer(ds)
		file := containerSettings(c, objs)["HOP_KEY_FILE"]
		if file == "" {
			t.Fatalf("DaemonSet %s: HOP_KEY_FILE is not set", ds.Name)
		}
		if err := hopKeyMounted(c, ds.Spec.Template.Spec.Volumes, file); err != "" {
			t.Errorf("DaemonSet %s: %s", ds.Name, err)
		}
	})
}

// hopKeyMounted explains why file is not the hop.key of a required
// nodeproxy-hop-key Secret mounted in c, or returns "".
func hopKeyMounted(c *corev1.Container, volumes []corev1.Volume, file string) string {
	for _, m := range c.VolumeMounts {
		if path.Dir(file) != path.Clean(m.MountPath) {
			continue
		}
		for _, v := range volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			switch {
			case v.Secret.SecretName != "nodeproxy-hop-key":
				return "HOP_KEY_FILE " + file + " is in Secret " + v.Secret.SecretName + ", not nodeproxy-hop-key"
			case v.Secret.Optional != nil && *v.Secret.Optional:
				return "the nodeproxy-hop-key Secret is optional: a node proxy would start trusting hops by address, or not at all"
			case path.Base(file) != "hop.key" || strings.Contains(m.SubPath, "/"):
				return "HOP_KEY_FILE " + file + " is not the Secret's hop.key"
			}
			return ""
		}
	}
	return "HOP_KEY_FILE " + file + " is not in a mounted Secret volume"
}
