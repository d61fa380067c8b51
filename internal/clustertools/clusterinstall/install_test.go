package clusterinstall

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

// TestOverlayRendersTheShippedManifests renders the overlay Install writes
// with kubectl kustomize, against the repository's manifests: every image
// is one built here, the TLS and hop key Secrets are the ones the
// DaemonSet mounts, in its namespace, the workloads Install waits for are
// in the namespaces it waits in, the public hosts are set, and the idle
// timings change only when asked.
func TestOverlayRendersTheShippedManifests(t *testing.T) {
	bins, err := controlplane.FindBinaries(os.Getenv("KUBEBUILDER_ASSETS"), controlplane.DefaultCacheDir(os.Getenv))
	if err != nil || bins.Kubectl == "" {
		t.Skipf("kubectl not built (make controlplane): %v", err)
	}
	manifests, err := filepath.Abs("../../../manifests")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		version string
		idle    time.Duration
		want    []string
		not     []string
	}{
		{name: "shipped timings", version: "v9", want: []string{"IDLE_TIMEOUT: 15m"}},
		{name: "short timings", version: "v9", idle: 40 * time.Second, want: []string{"IDLE_TIMEOUT: 40s", "REPORT_INTERVAL: 2s"}, not: []string{"IDLE_TIMEOUT: 15m"}},
		// git describe of an untagged commit can be all digits, which YAML reads as a number
		{name: "version of digits only", version: "6435819"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "overlay")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			hosts := []string{"10.200.0.2", "10.200.0.3", "localhost"}
			if _, err := writeCertificate(dir, hosts); err != nil {
				t.Fatal(err)
			}
			if err := writeHopKey(dir); err != nil {
				t.Fatal(err)
			}
			o := Options{Manifests: manifests, Registry: "sandgate.local", Version: tt.version, Hosts: hosts, IdleTimeout: tt.idle, ReportInterval: 2 * time.Second}
			text, err := overlayText(dir, o)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(bins.Kubectl, "kustomize", dir)
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("kubectl kustomize: %v\n%s", err, stderr.String())
			}
			rendered := string(out)
			for _, line := range strings.Split(rendered, "\n") {
				if img, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok && !strings.HasPrefix(img, "sandgate.local/") {
					t.Errorf("image %s is not one built here", img)
				}
			}
			want := append([]string{
				"image: sandgate.local/nodeproxy:" + tt.version, "image: sandgate.local/authapi:" + tt.version, "image: sandgate.local/agent-standin:" + tt.version,
				"name: nodeproxy-tls", "type: kubernetes.io/tls", "DSH_TRUSTED_HOSTS: 10.200.0.2,10.200.0.3,localhost",
			}, tt.want...)
			for _, w := range want {
				if !strings.Contains(rendered, w) {
					t.Errorf("the rendered overlay lacks %q", w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(rendered, n) {
					t.Errorf("the rendered overlay has %q", n)
				}
			}
			objs, err := controlplane.DecodeManifests(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []struct{ kind, name, namespace string }{
				{"Secret", "nodeproxy-tls", NodeProxyNamespace},
				{"Secret", "nodeproxy-hop-key", NodeProxyNamespace},
				{"DaemonSet", "nodeproxy", NodeProxyNamespace},
				{"Deployment", "authapi", SandboxNamespace},
				{"SandboxWarmPool", "dsh-pool", SandboxNamespace},
			} {
				found := false
				for _, obj := range objs {
					found = found || obj.GetKind() == w.kind && obj.GetName() == w.name && obj.GetNamespace() == w.namespace
				}
				if !found {
					t.Errorf("the rendered overlay has no %s %s in namespace %s", w.kind, w.name, w.namespace)
				}
			}
		})
	}
}
