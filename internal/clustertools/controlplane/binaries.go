package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// KubeVersion is the Kubernetes release the tools module builds.
const KubeVersion = "v1.37.2"

// ErrNoBinaries means the etcd and kube-apiserver binaries were not found.
var ErrNoBinaries = errors.New("control-plane binaries not found (run `make controlplane`)")

// Binaries are the paths of the executables the control plane runs.
type Binaries struct {
	Etcd          string
	KubeAPIServer string
	Kubectl       string
}

// FindBinaries looks for etcd and kube-apiserver in assetsDir (a
// KUBEBUILDER_ASSETS-style directory) when it is set, else in cacheDir.
// Kubectl is optional and left empty when absent.
func FindBinaries(assetsDir, cacheDir string) (Binaries, error) {
	dir := cacheDir
	if assetsDir != "" {
		dir = assetsDir
	}
	if dir == "" {
		return Binaries{}, ErrNoBinaries
	}
	b := Binaries{
		Etcd:          filepath.Join(dir, "etcd"),
		KubeAPIServer: filepath.Join(dir, "kube-apiserver"),
	}
	for _, p := range []string{b.Etcd, b.KubeAPIServer} {
		if !isExecutable(p) {
			return Binaries{}, fmt.Errorf("%w: %s", ErrNoBinaries, p)
		}
	}
	if k := filepath.Join(dir, "kubectl"); isExecutable(k) {
		b.Kubectl = k
	}
	return b, nil
}

// DefaultCacheDir is where `make controlplane` puts the binaries:
// $SANDGATE_CACHE or the user cache directory, then sandgate/bin/<version>.
func DefaultCacheDir(getenv func(string) string) string {
	root := getenv("SANDGATE_CACHE")
	if root == "" {
		ucd, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		root = filepath.Join(ucd, "sandgate")
	}
	return filepath.Join(root, "bin", KubeVersion)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
