// Package clusterinstall installs sandgate on a cluster the way an operator
// does: `kubectl apply -k` of an overlay whose only changes to the shipped
// manifests are the image names, the site's public host names and, where
// the caller asks for them, shorter idle timings; plus the node proxies'
// TLS certificate and shared hop key as the Secrets the manifests expect. It then waits until
// every workload is ready.
package clusterinstall

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The shipped namespaces (manifests/namespace): the auth API and the
// sandboxes run in SandboxNamespace, the node proxies and their TLS Secret
// in NodeProxyNamespace.
const (
	SandboxNamespace   = "sandgate"
	NodeProxyNamespace = "sandgate-node"
)

// Kubectl runs kubectl against the cluster with stdin and returns its
// output.
type Kubectl func(ctx context.Context, stdin string, args ...string) (string, error)

// Options configure Install.
type Options struct {
	// Manifests is the repository's manifests directory.
	Manifests string
	// Dir receives the overlay, the CA and the certificate.
	Dir string
	// Registry and Version name the images: <Registry>/<name>:<Version>.
	Registry, Version string
	// Hosts are the names and IPs browsers use to reach the node proxies:
	// the certificate's names and the app's trusted hosts.
	Hosts []string
	// IdleTimeout and ReportInterval, when set, replace the shipped idle
	// timings (15m, 10s) so a test can watch a suspend.
	IdleTimeout, ReportInterval time.Duration
}

// Entries tells a person or a test where an installed platform answers;
// `sandgate-cluster up --ready-file` writes them as JSON.
type Entries struct {
	// URLs are each node's https entry, in node order.
	URLs []string `json:"urls"`
	// Nodes are the node names, in the same order.
	Nodes []string `json:"nodes"`
	// NodeIPs are the nodes' InternalIPs, in the same order.
	NodeIPs []string `json:"nodeIPs"`
	// CAFile signed the entries' certificate.
	CAFile string `json:"caFile"`
	// Kubeconfig is a cluster-admin kubeconfig.
	Kubeconfig string `json:"kubeconfig"`
	// Kubectl is the kubectl binary.
	Kubectl string `json:"kubectl"`
	// Dir is the cluster's data directory, with every component's log.
	Dir string `json:"dir"`
	// PolicyEnforcer names the NetworkPolicy enforcer that runs; empty
	// when none does.
	PolicyEnforcer string `json:"policyEnforcer"`
	// ControlSocket is the Unix socket `up --control-socket` answers
	// control requests on (ending and starting the agent-sandbox
	// controller stand-in); empty when it listens on none.
	ControlSocket string `json:"controlSocket,omitempty"`
}

// Installed is what Install set up.
type Installed struct {
	// CAFile is the PEM CA that signed the node proxies' certificate.
	CAFile string
	// Overlay is the kustomization that was applied.
	Overlay string
}

// Install writes the overlay and the TLS certificate, applies them and
// waits for the auth API, the node proxies and the warm pool.
func Install(ctx context.Context, kubectl Kubectl, o Options) (*Installed, error) {
	overlay := filepath.Join(o.Dir, "overlay")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		return nil, fmt.Errorf("create the overlay directory: %w", err)
	}
	caFile, err := writeCertificate(overlay, o.Hosts)
	if err != nil {
		return nil, err
	}
	if err := writeHopKey(overlay); err != nil {
		return nil, err
	}
	text, err := overlayText(overlay, o)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(text), 0o644); err != nil {
		return nil, fmt.Errorf("write the overlay: %w", err)
	}
	if _, err := kubectl(ctx, "", "apply", "-k", overlay); err != nil {
		return nil, err
	}
	for _, w := range [][]string{
		{"-n", SandboxNamespace, "rollout", "status", "deployment/authapi", "--timeout=300s"},
		{"-n", NodeProxyNamespace, "rollout", "status", "daemonset/nodeproxy", "--timeout=300s"},
		{"-n", SandboxNamespace, "wait", "--for=jsonpath={.status.readyReplicas}=2", "sandboxwarmpool/dsh-pool", "--timeout=300s"},
	} {
		if _, err := kubectl(ctx, "", w...); err != nil {
			return nil, err
		}
	}
	return &Installed{CAFile: caFile, Overlay: overlay}, nil
}

// overlayText is the kustomization: the shipped manifests, the images
// built here, the TLS and hop key Secrets and the site's settings.
func overlayText(overlay string, o Options) (string, error) {
	base, err := filepath.Rel(overlay, o.Manifests)
	if err != nil {
		return "", fmt.Errorf("locate the manifests from the overlay: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - {name: sandgate/authapi, newName: %[2]s/authapi, newTag: %[3]q}
  - {name: sandgate/nodeproxy, newName: %[2]s/nodeproxy, newTag: %[3]q}
  - {name: dsh-web, newName: %[2]s/agent-standin, newTag: %[3]q}
secretGenerator:
  - name: nodeproxy-tls
    namespace: %[5]s
    type: kubernetes.io/tls
    files: [tls.crt, tls.key]
    options: {disableNameSuffixHash: true}
  - name: nodeproxy-hop-key
    namespace: %[5]s
    files: [hop.key]
    options: {disableNameSuffixHash: true}
patches:
  - target: {kind: ConfigMap, name: sandgate-public}
    patch: |-
      - {op: replace, path: /data/DSH_TRUSTED_HOSTS, value: "%[4]s"}
`, base, o.Registry, o.Version, strings.Join(o.Hosts, ","), NodeProxyNamespace)
	if o.IdleTimeout > 0 {
		fmt.Fprintf(&b, `  - target: {kind: ConfigMap, name: authapi-config}
    patch: |-
      - {op: replace, path: /data/IDLE_TIMEOUT, value: "%s"}
      - {op: replace, path: /data/REPORT_INTERVAL, value: "%s"}
  - target: {kind: ConfigMap, name: nodeproxy-config}
    patch: |-
      - {op: replace, path: /data/REPORT_INTERVAL, value: "%[2]s"}
`, o.IdleTimeout, o.ReportInterval)
	}
	return b.String(), nil
}
