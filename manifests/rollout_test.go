package manifests_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
)

// endpointsPropagation bounds how long a deleted pod's endpoint takes to
// leave every kube-proxy and load balancer health check: the EndpointSlice
// controller's batching, kube-proxy's minimum sync period and a cloud load
// balancer's health-check interval. A preStop delay shorter than this
// drops the requests that still arrive.
const endpointsPropagation = 5 * time.Second

// authapiShutdownTimeout is cmd/authapi's SHUTDOWN_TIMEOUT default.
const authapiShutdownTimeout = 20 * time.Second

// DRAIN_DELAY's defaults in cmd/nodeproxy and cmd/authapi: how long the
// preStop drain holds SIGTERM back once /readyz fails.
const (
	nodeproxyDrainDelay = 15 * time.Second
	authapiDrainDelay   = 10 * time.Second
)

// systemPriority is where Kubernetes' own classes begin
// (system-cluster-critical): ours must stay below it.
const systemPriority = 2000000000

// settingDuration is the container's setting key as a duration, def
// when the rendering does not set it.
func settingDuration(t *testing.T, name, key string, c *corev1.Container, objs []*unstructured.Unstructured, def time.Duration) time.Duration {
	t.Helper()
	v, ok := containerSettings(c, objs)[key]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %s %q: %v", name, key, v, err)
	}
	return d
}

// checkPreStopDrain checks that the preStop hook is the binary's own
// "drain", run inside the container: a kubelet httpGet or a sleep would
// leave /readyz passing until SIGTERM, and an httpGet comes from outside
// the pod, where the drain is refused.
func checkPreStopDrain(t *testing.T, name, binary string, c *corev1.Container) {
	t.Helper()
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil {
		t.Errorf("%s: preStop is not an exec of %q drain", name, binary)
		return
	}
	if got := c.Lifecycle.PreStop.Exec.Command; len(got) != 2 || got[0] != binary || got[1] != "drain" {
		t.Errorf("%s: preStop runs %q, want [%s drain]", name, got, binary)
	}
}

// checkDrain checks that a pod keeps serving for delay (DRAIN_DELAY)
// while its endpoint goes away, then drains within its grace period, and
// that readiness comes from /readyz, which fails from the start of the
// preStop drain.
func checkDrain(t *testing.T, name string, spec *corev1.PodSpec, c *corev1.Container, delay, drain time.Duration) {
	t.Helper()
	if delay <= endpointsPropagation {
		t.Errorf("%s: DRAIN_DELAY %v, want longer than the endpoints propagation (%v)", name, delay, endpointsPropagation)
	}
	grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	if grace <= delay+drain {
		t.Errorf("%s: terminationGracePeriodSeconds %v leaves no room for the preStop drain %v plus the shutdown %v", name, grace, delay, drain)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("%s: readiness is not /readyz, which fails once the drain begins", name)
	}
}

// TestRolloutsDrainBeforeStopping (item 5 of issue 24): in every
// rendering, node proxies and auth API replicas keep serving while their
// endpoints are withdrawn, then drain; the node proxy has a priority
// class above sandboxes; the DaemonSet surges where its ports allow.
func TestRolloutsDrainBeforeStopping(t *testing.T) {
	for name, objs := range everyRendering(t) {
		for _, ds := range nodeproxyDaemonSets(t, objs) {
			spec := &ds.Spec.Template.Spec
			c := nodeproxyContainer(ds)
			drain := settingDuration(t, name, "SHUTDOWN_TIMEOUT", c, objs, nodeproxy.DefaultDrainTimeout)
			delay := settingDuration(t, name, "DRAIN_DELAY", c, objs, nodeproxyDrainDelay)
			checkPreStopDrain(t, name+" nodeproxy", "/nodeproxy", c)
			checkDrain(t, name+" nodeproxy", spec, c, delay, drain)
			checkPriority(t, name, spec.PriorityClassName, objs)
			checkSurge(t, name, ds)
		}
		for _, obj := range objs {
			if obj.GetKind() != "Deployment" || obj.GetName() != "authapi" {
				continue
			}
			d := decodeKind[appsv1.Deployment](t, []*unstructured.Unstructured{obj}, "Deployment", "authapi")
			c := &d.Spec.Template.Spec.Containers[0]
			drain := settingDuration(t, name, "SHUTDOWN_TIMEOUT", c, objs, authapiShutdownTimeout)
			delay := settingDuration(t, name, "DRAIN_DELAY", c, objs, authapiDrainDelay)
			checkPreStopDrain(t, name+" authapi", "/authapi", c)
			checkDrain(t, name+" authapi", &d.Spec.Template.Spec, c, delay, drain)
			if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
				t.Errorf("%s: the auth API's rollout may take a replica away before its successor is ready", name)
			}
		}
	}
}

// checkPriority: the node proxy runs with a PriorityClass the rendering
// ships, above the sandboxes' default of 0 and below Kubernetes' own.
func checkPriority(t *testing.T, name, class string, objs []*unstructured.Unstructured) {
	t.Helper()
	if class == "" {
		t.Errorf("%s: the node proxy has no priority class", name)
		return
	}
	pc := decodeKind[schedulingv1.PriorityClass](t, objs, "PriorityClass", class)
	if pc.Value <= 0 || pc.Value >= systemPriority || pc.GlobalDefault {
		t.Errorf("%s: PriorityClass %s has value %d (global default %v), want above 0, below %d, not the default", name, class, pc.Value, pc.GlobalDefault, systemPriority)
	}
}

// checkSurge: a DaemonSet whose pod holds a host port (hostPort, or the
// host network) cannot surge, since the new pod cannot schedule beside
// the old one; maxSurge must then be 0 and maxUnavailable 1, otherwise
// the rollout surges.
func checkSurge(t *testing.T, name string, ds *appsv1.DaemonSet) {
	t.Helper()
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil {
		t.Errorf("%s: DaemonSet %s has no rolling update", name, ds.Name)
		return
	}
	hostPort := ds.Spec.Template.Spec.HostNetwork
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			hostPort = hostPort || p.HostPort != 0
		}
	}
	surge := ru.MaxSurge != nil && ru.MaxSurge.IntValue() > 0
	switch {
	case hostPort && surge:
		t.Errorf("%s: DaemonSet %s surges while its pods hold a host port: the new pod never schedules", name, ds.Name)
	case !hostPort && !surge:
		t.Errorf("%s: DaemonSet %s holds no host port but does not surge", name, ds.Name)
	case hostPort && (ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 1):
		t.Errorf("%s: DaemonSet %s: maxUnavailable %v, want one node at a time", name, ds.Name, ru.MaxUnavailable)
	}
}
