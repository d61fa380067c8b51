package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// TokenFileEnv is the container variable naming the file, inside the
// container, where the app writes its launch token (DSH Web's proposed
// --token-file). It must lie on an emptyDir volume, which the node proxy
// finds under the pod's directory on the node.
const TokenFileEnv = "DSH_TOKEN_FILE"

// emptyDirPlugin is the kubelet's directory name for emptyDir volumes
// under <pod dir>/volumes/.
const emptyDirPlugin = "kubernetes.io~empty-dir"

// podDir is the pod's directory on its node, like
// /var/lib/kubelet/pods/<uid>.
func (w *worker) podDir() string { return filepath.Join(w.node.podsDir, string(w.uid)) }

// emptyDirs creates the pod's emptyDir volumes under its pod directory:
// <pod dir>/volumes/kubernetes.io~empty-dir/<volume>. They live as long as
// the pod, across container restarts.
func (w *worker) emptyDirs() error {
	for _, v := range w.pod.Spec.Volumes {
		if v.EmptyDir == nil {
			continue
		}
		if err := os.MkdirAll(emptyDirPath(w.podDir(), v.Name), 0o750); err != nil {
			return fmt.Errorf("create emptyDir volume %s: %w", v.Name, err)
		}
	}
	return nil
}

func emptyDirPath(podDir, volume string) string {
	return filepath.Join(podDir, "volumes", emptyDirPlugin, volume)
}

// tokenFile returns where on the node the app writes the file its
// container's DSH_TOKEN_FILE names; "" when the variable is not set or
// names no file on an emptyDir volume (logged: like a real app writing
// into its own filesystem, nobody on the node could read it).
func (w *worker) tokenFile(ctx context.Context, c corev1.Container) string {
	values := w.envValues(ctx, c, TokenFileEnv)
	if len(values) == 0 || values[len(values)-1] == "" {
		return ""
	}
	host, err := onHost(w.podDir(), w.pod.Spec.Volumes, c.VolumeMounts, values[len(values)-1])
	if err != nil {
		w.log.Warn("token file not on the node", "env", TokenFileEnv, "error", err)
		return ""
	}
	return host
}

// errNotOnEmptyDir means a container path is on no emptyDir volume.
var errNotOnEmptyDir = errors.New("not on an emptyDir volume")

// onHost maps the file p inside a container onto the node, through the
// container's mount of an emptyDir volume (the deepest mount holding p).
func onHost(podDir string, volumes []corev1.Volume, mounts []corev1.VolumeMount, p string) (string, error) {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return "", fmt.Errorf("%q is not a clean absolute file path", p)
	}
	var mount *corev1.VolumeMount
	for i, m := range mounts {
		dir := strings.TrimSuffix(m.MountPath, "/")
		if strings.HasPrefix(p, dir+"/") && (mount == nil || len(dir) > len(strings.TrimSuffix(mount.MountPath, "/"))) {
			mount = &mounts[i]
		}
	}
	if mount == nil {
		return "", fmt.Errorf("%q: %w", p, errNotOnEmptyDir)
	}
	isEmptyDir := false
	for _, v := range volumes {
		if v.Name == mount.Name {
			isEmptyDir = v.EmptyDir != nil
		}
	}
	if !isEmptyDir {
		return "", fmt.Errorf("%q is on volume %s: %w", p, mount.Name, errNotOnEmptyDir)
	}
	if mount.SubPath != "" && !filepath.IsLocal(mount.SubPath) {
		return "", fmt.Errorf("subPath %q of volume %s leaves the volume", mount.SubPath, mount.Name)
	}
	rel := strings.TrimPrefix(p, strings.TrimSuffix(mount.MountPath, "/")+"/")
	return filepath.Join(emptyDirPath(podDir, mount.Name), mount.SubPath, rel), nil
}
