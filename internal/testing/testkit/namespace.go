package testkit

import (
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
)

// Namespace is a namespace of the calling test's own on the shared control
// plane, with admin clients.
type Namespace struct {
	Name   string
	CP     *controlplane.ControlPlane
	Config *rest.Config
	Kube   kubernetes.Interface
	SB     *sandboxapi.Client
}

// NewNamespace creates a namespace named after the calling test on the
// shared control plane (starting it if needed) and admin clients for it.
func NewNamespace(t testing.TB) *Namespace {
	t.Helper()
	cp := ControlPlane(t)
	cfg := cp.AdminConfig()
	kube, sb := Clients(t, cfg)
	return &Namespace{Name: clustertest.Namespace(t, cp), CP: cp, Config: cfg, Kube: kube, SB: sb}
}

// Clients builds the core and sandbox clients for cfg.
func Clients(t testing.TB, cfg *rest.Config) (kubernetes.Interface, *sandboxapi.Client) {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("build kube client: %v", err)
	}
	sb, err := sandboxapi.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("build sandbox client: %v", err)
	}
	return kube, sb
}
