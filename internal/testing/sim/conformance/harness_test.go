package conformance_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// forEachRelease runs test once per release the stand-in models, as
// subtests named by the release.
func forEachRelease(t *testing.T, test func(t *testing.T, r controller.Release)) {
	for _, r := range controller.Releases() {
		t.Run(string(r), func(t *testing.T) { test(t, r) })
	}
}

// api reaches one test's namespace.
type api struct {
	t    *testing.T
	ns   string
	kube kubernetes.Interface
	sb   *sandboxapi.Client
}

// simulated is a simulated cluster (controller and kubelet) of release r
// with a warm pool of replicas spares (simtest.PoolName).
func simulated(t *testing.T, r controller.Release, replicas int32) (*simtest.Env, *api) {
	t.Helper()
	e := simtest.Start(t, testkit.ControlPlane(t), simtest.Options{Replicas: replicas, Release: r})
	return e, &api{t: t, ns: e.NS, kube: e.Core, sb: e.SB}
}

// bare is the stand-in controller alone, placement left to others as
// against a real cluster; the test is the scheduler and the kubelet.
type bare struct {
	*api
	servicePosts atomic.Int64 // Service creations the controller sent
}

// node is where the test binds pods; no Node object is needed for that.
const node = "conformance-node"

func startBare(t *testing.T, r controller.Release) *bare {
	t.Helper()
	n := testkit.NewNamespace(t)
	b := &bare{api: &api{t: t, ns: n.Name, kube: n.Kube, sb: n.SB}}
	cfg := rest.CopyConfig(n.Config)
	services := "/api/v1/namespaces/" + n.Name + "/services"
	testkit.ObserveRequests(cfg, func(req *http.Request) {
		if req.Method == http.MethodPost && req.URL.Path == services {
			b.servicePosts.Add(1)
		}
	})
	kube, sb := testkit.Clients(t, cfg)
	ctrl, err := controller.New(controller.Options{
		Client: kube, Sandboxes: sb, Namespaces: []string{n.Name}, LeaveScheduling: true, Release: r,
	})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Run(t, "controller", ctrl.Run)
	testkit.Receive(t, "controller ready", ctrl.Ready())
	return b
}

// spec is a Running Sandbox's spec: one container with a named port, a
// volume claim template "home", and a headless Service if service.
func spec(service bool) agents.SandboxSpec {
	return agents.SandboxSpec{
		OperatingMode: agents.OperatingModeRunning,
		PodTemplate: agents.PodTemplate{
			Metadata: agents.PodMetadata{Labels: map[string]string{"app": "conformance"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "example/app:1",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			}}},
		},
		VolumeClaimTemplates: []agents.PersistentVolumeClaimTemplate{{
			Metadata: agents.VolumeClaimMetadata{Name: "home"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}},
		Service: ptr.To(service),
	}
}

func (a *api) createSandbox(name string, service bool) *agents.Sandbox {
	a.t.Helper()
	sb, err := a.sb.Sandboxes(a.ns).Create(a.t.Context(), &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec(service),
	}, metav1.CreateOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	return sb
}

// setMode patches spec.operatingMode, as the platform does.
func (a *api) setMode(name string, mode agents.OperatingMode) {
	a.t.Helper()
	body := fmt.Sprintf(`{"spec":{"operatingMode":%q}}`, mode)
	if _, err := a.sb.Sandboxes(a.ns).Patch(a.t.Context(), name, "application/merge-patch+json", []byte(body), metav1.PatchOptions{}); err != nil {
		a.t.Fatal(err)
	}
}

// waitSandbox polls the Sandbox until every check passes and returns it.
func (a *api) waitSandbox(name, what string, checks ...func(*agents.Sandbox) error) *agents.Sandbox {
	a.t.Helper()
	var sb *agents.Sandbox
	testkit.EventuallyNil(a.t, name+": "+what, func() error {
		var err error
		if sb, err = a.sb.Sandboxes(a.ns).Get(a.t.Context(), name, metav1.GetOptions{}); err != nil {
			return err
		}
		for _, check := range checks {
			if err := check(sb); err != nil {
				return err
			}
		}
		return nil
	})
	return sb
}

// cond checks that condition typ reads want, "Status/Reason", or is
// absent when want is "".
func cond(typ, want string) func(*agents.Sandbox) error {
	return func(sb *agents.Sandbox) error {
		if got := condOf(sb.Status.Conditions, typ); got != want {
			return fmt.Errorf("%s is %q, want %q", typ, got, want)
		}
		return nil
	}
}

func condOf(conds []metav1.Condition, typ string) string {
	for _, c := range conds {
		if c.Type == typ {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return ""
}

func (a *api) pod(name string) (*corev1.Pod, error) {
	return a.kube.CoreV1().Pods(a.ns).Get(a.t.Context(), name, metav1.GetOptions{})
}

// waitPod waits for the pod named name whose UID is not notUID.
func (a *api) waitPod(name string, notUID string) *corev1.Pod {
	a.t.Helper()
	var p *corev1.Pod
	testkit.EventuallyNil(a.t, "pod "+name, func() error {
		var err error
		if p, err = a.pod(name); err == nil && string(p.UID) == notUID {
			err = fmt.Errorf("still the pod %s", notUID)
		}
		return err
	})
	return p
}
