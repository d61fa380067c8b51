package manifests_test

import (
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// nodeproxyDefaultListenAddr is cmd/nodeproxy's LISTEN_ADDR default.
const nodeproxyDefaultListenAddr = ":8080"

// TestCrossNodeHopPortReachable: a node proxy hops a request for a pod on
// another node to <that node's InternalIP>:PEER_PORT (0 or unset: its own
// LISTEN_ADDR port). In every variant that deploys node proxies, that port
// must answer on the node's IP and reach the plain listener: a container
// port with that hostPort, or the host network. Without it every such
// request is refused and answered 502, which no test on loopback shows.
func TestCrossNodeHopPortReachable(t *testing.T) {
	eachNodeproxy(t, func(t *testing.T, ds *appsv1.DaemonSet, objs []*unstructured.Unstructured) {
		if err := hopReachable(ds, objs); err != "" {
			t.Errorf("DaemonSet %s: %s", ds.Name, err)
		}
	})
}

// eachNodeproxy runs check on every node proxy DaemonSet of every
// kustomization, with the objects it renders with, in a subtest named for
// the kustomization; it fails if no kustomization deploys a node proxy.
func eachNodeproxy(t *testing.T, check func(t *testing.T, ds *appsv1.DaemonSet, objs []*unstructured.Unstructured)) {
	t.Helper()
	variants := 0
	for _, dir := range kustomizationDirs(t) {
		objs := build(t, dir)
		for _, ds := range nodeproxyDaemonSets(t, objs) {
			variants++
			t.Run(dir, func(t *testing.T) { check(t, ds, objs) })
		}
	}
	if variants == 0 {
		t.Fatal("no kustomization deploys a node proxy")
	}
}

// kustomizationDirs lists every kustomization, as `kubectl apply -k` takes
// them: the base, its parts, the whole-platform variants and the examples.
// Components are left out: they render only with a base
// (combinationDirs).
func kustomizationDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, pattern := range []string{"kustomization.yaml", "*/kustomization.yaml", "*/*/kustomization.yaml", "../examples/*/kustomization.yaml"} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range found {
			if !isComponent(t, k) {
				dirs = append(dirs, filepath.Dir(k))
			}
		}
	}
	return dirs
}

// nodeproxyDaemonSets are the rendered DaemonSets that run the nodeproxy
// image.
func nodeproxyDaemonSets(t *testing.T, objs []*unstructured.Unstructured) []*appsv1.DaemonSet {
	t.Helper()
	return slices.DeleteFunc(decodeAll[appsv1.DaemonSet](t, objs, "DaemonSet", "", ""), func(ds *appsv1.DaemonSet) bool {
		return nodeproxyContainer(ds) == nil
	})
}

func nodeproxyContainer(ds *appsv1.DaemonSet) *corev1.Container {
	for i, c := range ds.Spec.Template.Spec.Containers {
		if strings.Contains(c.Image, "nodeproxy") {
			return &ds.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

// hopReachable explains why the hop port of ds is not reachable on the
// node's IP, or returns "".
func hopReachable(ds *appsv1.DaemonSet, objs []*unstructured.Unstructured) string {
	c := nodeproxyContainer(ds)
	settings := containerSettings(c, objs)
	listenAddr := settings["LISTEN_ADDR"]
	if listenAddr == "" {
		listenAddr = nodeproxyDefaultListenAddr
	}
	_, p, err := net.SplitHostPort(listenAddr)
	listen, perr := strconv.Atoi(p)
	if err != nil || perr != nil {
		return "LISTEN_ADDR " + strconv.Quote(listenAddr) + " has no numeric port"
	}
	peer, from := listen, "PEER_PORT unset, so the LISTEN_ADDR port"
	if v := settings["PEER_PORT"]; v != "" && v != "0" {
		if peer, err = strconv.Atoi(v); err != nil {
			return "PEER_PORT " + strconv.Quote(v) + " is not a number"
		}
		from = "PEER_PORT"
	}
	spec := ds.Spec.Template.Spec
	for _, port := range c.Ports {
		if port.Protocol != "" && port.Protocol != corev1.ProtocolTCP {
			continue
		}
		hostPort := port.HostPort
		if spec.HostNetwork && hostPort == 0 {
			hostPort = port.ContainerPort // as the API server defaults it
		}
		if hostPort == int32(peer) && port.ContainerPort == int32(listen) {
			return ""
		}
	}
	return "hops dial <node IP>:" + strconv.Itoa(peer) + " (" + from + "), but no container port maps that host port to the listener on " +
		strconv.Itoa(listen) + ": every cross-node request would be refused (502). Give container port " + strconv.Itoa(listen) +
		" hostPort " + strconv.Itoa(peer) + ", or run on the host network"
}

// containerSettings is the nodeproxy container's environment as the
// kubelet builds it (envFrom ConfigMaps, then env literals), with its
// flags (--name=value or --name value) over it as the binary reads them.
func containerSettings(c *corev1.Container, objs []*unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		for _, obj := range objs {
			if obj.GetKind() == "ConfigMap" && obj.GetName() == from.ConfigMapRef.Name {
				data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
				for k, v := range data {
					out[from.Prefix+k] = v
				}
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			out[e.Name] = e.Value
		}
	}
	args := append(append([]string(nil), c.Command...), c.Args...)
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		out[strings.ToUpper(strings.ReplaceAll(name, "-", "_"))] = value
	}
	return out
}
