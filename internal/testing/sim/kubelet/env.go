package kubelet

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// trustedHosts resolves the container's DSH_TRUSTED_HOSTS into host names.
func (w *worker) trustedHosts(ctx context.Context, c corev1.Container) []string {
	var hosts []string
	for _, value := range w.envValues(ctx, c, TrustedHostsEnv) {
		for h := range strings.SplitSeq(value, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hosts = append(hosts, h)
			}
		}
	}
	return hosts
}

// envValues resolves every entry of the container variable name, given as
// a value or taken from a ConfigMap key, as a kubelet would when it builds
// the container's environment. An unresolvable reference is logged and
// skipped.
func (w *worker) envValues(ctx context.Context, c corev1.Container, name string) []string {
	var values []string
	for _, e := range c.Env {
		if e.Name != name {
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
		values = append(values, value)
	}
	return values
}

func configMapRef(e corev1.EnvVar) *corev1.ConfigMapKeySelector {
	if e.ValueFrom == nil {
		return nil
	}
	return e.ValueFrom.ConfigMapKeyRef
}
