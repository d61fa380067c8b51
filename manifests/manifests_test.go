package manifests_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// renders caches each kustomization's output: every test renders every
// variant, and kubectl kustomize is the slow part.
var renders sync.Map

// build renders a kustomization with the kubectl the tools module builds;
// the objects are the caller's own copies.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, ok := renders.Load(dir)
	if !ok {
		out, _ = renders.LoadOrStore(dir, kustomize(t, dir))
	}
	var objs []*unstructured.Unstructured
	for _, obj := range out.([]*unstructured.Unstructured) {
		objs = append(objs, obj.DeepCopy())
	}
	return objs
}

func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	bins, err := controlplane.FindBinaries(os.Getenv("KUBEBUILDER_ASSETS"), controlplane.DefaultCacheDir(os.Getenv))
	if err != nil || bins.Kubectl == "" {
		t.Fatalf("kubectl not found next to the control-plane binaries (run `make controlplane`): %v", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bins.Kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	objs, err := controlplane.DecodeManifests(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// applier applies objects with server-side apply, for real or as a dry run.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T) *applier {
	t.Helper()
	cfg := testkit.ControlPlane(t).AdminConfig()
	// PodSecurity warns about the node proxy's hostPath by design.
	cfg.WarningHandler = rest.NoWarnings{}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// installMonitoringCRDs installs the Prometheus Operator's ServiceMonitor
// and PrometheusRule CRDs (manifests/monitoring/crds, which no
// kustomization ships), so that the monitoring pack is dry-run against
// their schemas, and waits until the API server serves them.
func (a *applier) installMonitoringCRDs(t *testing.T) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("monitoring", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in monitoring/crds: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := controlplane.DecodeManifests(data)
		if err != nil {
			t.Fatalf("decode %s: %v", f, err)
		}
		for _, obj := range objs {
			if err := a.apply(t, obj, false); err != nil {
				t.Fatalf("install %s: %v", f, err)
			}
		}
	}
	served := func() bool {
		for _, kind := range []string{"PrometheusRule", "ServiceMonitor"} {
			if _, err := a.mapper.RESTMapping(schema.GroupKind{Group: "monitoring.coreos.com", Kind: kind}, "v1"); err != nil {
				return false
			}
		}
		return true
	}
	testkit.Eventually(t, "the API server serving monitoring.coreos.com/v1", func() bool {
		a.mapper.Reset()
		return served()
	})
}

func (a *applier) apply(t *testing.T, obj *unstructured.Unstructured, dryRun bool) error {
	t.Helper()
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	opts := metav1.ApplyOptions{FieldManager: "sandgate-test", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if ns := obj.GetNamespace(); ns != "" {
		ri = a.dyn.Resource(m.Resource).Namespace(ns)
	}
	_, err = ri.Apply(t.Context(), obj.GetName(), obj, opts)
	return err
}

func TestEveryKustomizationBuildsAndAppliesByDryRun(t *testing.T) {
	a := newApplier(t)
	for _, obj := range build(t, "namespace") {
		if err := a.apply(t, obj, false); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("apply namespace: %v", err)
		}
	}
	a.installMonitoringCRDs(t)
	for _, dir := range kustomizationDirs(t) {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			if len(objs) == 0 {
				t.Fatal("kustomization renders nothing")
			}
			for _, obj := range objs {
				if err := a.apply(t, obj, true); err != nil {
					t.Errorf("dry-run apply %s %s: %v", obj.GetKind(), obj.GetName(), err)
				}
			}
		})
	}
}
