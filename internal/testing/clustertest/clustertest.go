// Package clustertest shares one real control plane (etcd + kube-apiserver
// with the agent-sandbox CRDs, upstream's own under make test) among the
// tests of a package and gives each test a namespace of its own.
package clustertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

// Main starts a control plane, stores it in *cp, runs the package's tests and
// stops the control plane, also when the run is interrupted by a signal.
// Use it as `func TestMain(m *testing.M) { os.Exit(clustertest.Main(m, &cluster)) }`.
func Main(m *testing.M, cp **controlplane.ControlPlane) int {
	c, err := Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "clustertest:", err)
		return 1
	}
	*cp = c
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if _, ok := <-sigs; ok {
			c.Stop()
			os.Exit(130)
		}
	}()
	defer func() {
		signal.Stop(sigs)
		close(sigs)
		c.Stop()
	}()
	return m.Run()
}

// Start starts a control plane configured from the environment:
// KUBEBUILDER_ASSETS or SANDGATE_CACHE locate the binaries, and CRDs
// chooses the CRDs. It logs to stderr which CRDs it applied.
func Start(ctx context.Context) (*controlplane.ControlPlane, error) {
	bins, err := controlplane.FindBinaries(os.Getenv("KUBEBUILDER_ASSETS"), controlplane.DefaultCacheDir(os.Getenv))
	if err != nil {
		return nil, err
	}
	crdDir, source, err := CRDs(os.Getenv)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return controlplane.Start(ctx, controlplane.Options{Binaries: bins, CRDDir: crdDir, CRDSource: source, Logger: log})
}

// ErrNoUpstreamCRDs means CI runs the tests without upstream's CRDs.
var ErrNoUpstreamCRDs = errors.New("AGENT_SANDBOX_CRDS is unset: set it to a directory of upstream agent-sandbox's CRD files " +
	"(make test sets it, by default to ../shared/upstream/agent-sandbox-<AGENT_SANDBOX_OLDEST>/crds)")

// CRDs returns the directory of the CRDs the API server gets, and its
// label for the log: AGENT_SANDBOX_CRDS, upstream agent-sandbox's own CRD
// files, so that every object a test writes is checked by upstream's
// schema; unset, the CRDs generated from internal/sandboxapi
// (manifests/crds), except under CI=true, where that is ErrNoUpstreamCRDs.
func CRDs(getenv func(string) string) (dir, source string, err error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", "", err
	}
	generated := filepath.Join(root, "manifests", "crds")
	dir = getenv("AGENT_SANDBOX_CRDS")
	if dir == "" {
		if getenv("CI") == "true" {
			return "", "", ErrNoUpstreamCRDs
		}
		return generated, "generated", nil
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", "", fmt.Errorf("locate AGENT_SANDBOX_CRDS: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", "", fmt.Errorf("AGENT_SANDBOX_CRDS=%s is not a directory", dir)
	}
	return dir, controlplane.CRDSourceOf(dir, generated), nil
}

// ModuleRoot finds the sandgate module's root directory from the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("get working directory: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/sandgate/sandgate\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no sandgate go.mod above the working directory")
		}
		dir = parent
	}
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a namespace for the calling test, named after it.
func Namespace(t testing.TB, cp *controlplane.ControlPlane) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatalf("build admin client: %v", err)
	}
	base := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = strings.Trim(base[:40], "-")
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	name := base + "-" + hex.EncodeToString(suffix)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}
