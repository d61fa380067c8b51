package localcluster

import (
	"context"
	_ "embed"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

//go:embed addons/storage.yaml
var storageManifest string

// startStorage deploys the default StorageClass and starts
// local-path-provisioner.
func (c *Cluster) startStorage(ctx context.Context) error {
	img := c.opts.Images.Busybox
	m, err := c.render("storage", storageManifest, map[string]string{"Image": img})
	if err != nil {
		return err
	}
	if _, err := c.Kubectl(ctx, m, "apply", "-f", "-"); err != nil {
		return err
	}
	return c.start("local-path-provisioner", c.opts.Paths.Data, c.opts.Binaries.path("local-path-provisioner"),
		"start", "--kubeconfig="+c.Kubeconfig, "--namespace=local-path-storage", "--helper-image="+img,
		"--configmap-name=local-path-config", "--service-account-name=local-path-provisioner-service-account")
}

// Run starts a host process that belongs to the cluster: it logs into the
// cluster's directory and Stop ends it. The caller may end it earlier
// and Run it again under the same name; its log goes on in the same file.
func (c *Cluster) Run(name, bin string, args ...string) (*controlplane.Process, error) {
	if err := c.start(name, c.opts.Paths.Data, bin, args...); err != nil {
		return nil, err
	}
	return c.procs[len(c.procs)-1], nil
}
