package kubelet

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// trustedHosts resolves the container's DSH_TRUSTED_HOSTS, given as a
// value or taken from a ConfigMap key, as a kubelet would when it builds
// the container's environment. An unresolvable reference is logged and
// leaves the app with its built-in hosts only.
func (w *worker) trustedHosts(ctx context.Context, c corev1.Container) []string {
	var hosts []string
	for _, e := range c.Env {
		if e.Name != TrustedHostsEnv {
			continue
		}
		value := e.Value
		if ref := configMapRef(e); ref != nil {
			cm, err := w.k.opts.Client.CoreV1().ConfigMaps(w.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				w.log.Warn("resolve env", "env", e.Name, "configmap", ref.Name, "error", err)
				continue
			}
			value = cm.Data[ref.Key]
		}
		for h := range strings.SplitSeq(value, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hosts = append(hosts, h)
			}
		}
	}
	return hosts
}

func configMapRef(e corev1.EnvVar) *corev1.ConfigMapKeySelector {
	if e.ValueFrom == nil {
		return nil
	}
	return e.ValueFrom.ConfigMapKeyRef
}
