package clusterjourney

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/netpolicy"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// probeMatrix probes every flow of the base variant between real pods and
// addresses, from an ephemeral busybox container attached to a real pod
// of the source, and fails on any flow whose outcome differs from the
// matrix; without an enforcer, only on a needed flow that fails. Flows to
// or from outside the machine are listed, not sent.
func (j *journey) probeMatrix() {
	j.t.Helper()
	m, err := netpolicy.LoadMatrix(filepath.Join(repoRoot(j.t), "docs", "traffic-matrix.yaml"))
	if err != nil {
		j.t.Fatal(err)
	}
	base, ok := m.Variants["base"]
	if !ok {
		j.t.Fatalf("the traffic matrix has no base variant")
	}
	j.startStranger(m.Peers["other-pod"])
	rows := []string{fmt.Sprintf("%-16s %-16s %-9s %-8s %-8s %s", "from", "to", "port", "expected", "probed", "why")}
	var failed []string
	for _, f := range base.Flows {
		want := map[bool]string{true: "allow", false: "refuse"}[f.Allowed]
		got, note := j.probe(m, f)
		if note != "" {
			got = "-"
		}
		if note == "" && !f.Allowed && j.e.PolicyEnforcer == "" {
			note = " (NOT ENFORCED: no NetworkPolicy enforcer runs)"
		}
		rows = append(rows, fmt.Sprintf("%-16s %-16s %-9s %-8s %-8s %s%s", f.From, f.To, strconv.Itoa(int(f.Port))+"/"+string(f.Proto), want, got, f.Why, note))
		if note == "" && got != want {
			failed = append(failed, fmt.Sprintf("%s -> %s %d/%s: %s, want %s (%s)", f.From, f.To, f.Port, f.Proto, got, want, f.Why))
		}
	}
	enforced := "NOT enforced"
	if j.e.PolicyEnforcer != "" {
		enforced = "enforced by " + j.e.PolicyEnforcer
	}
	j.t.Log("NetworkPolicy probes, base variant, policies " + enforced + ":\n  " + strings.Join(rows, "\n  "))
	if len(failed) > 0 {
		j.t.Fatalf("flows that disagree with docs/traffic-matrix.yaml:\n  %s", strings.Join(failed, "\n  "))
	}
}

// probe sends one flow and says "allow" or "refuse"; a note says why it
// was not sent. Pods probe from an ephemeral busybox container in a real
// pod of the source; "node" probes from the last node's network
// namespace, "outside" from the host, which is neither node nor pod.
func (j *journey) probe(m *netpolicy.Matrix, f netpolicy.Flow) (string, string) {
	src, ok1 := m.Peers[f.From]
	dst, ok2 := m.Peers[f.To]
	if !ok1 || !ok2 {
		return "", " (not probed: unknown peer)"
	}
	var srcPod string
	if src.Address == "" {
		if srcPod = j.podOf(src, ""); srcPod == "" {
			return "", " (not probed: no such pod runs)"
		}
	}
	addr, port := j.addressOf(dst, f, srcPod)
	if addr == "" {
		return "", " (not probed: nothing on this machine stands for it)"
	}
	udp := f.Proto == "UDP"
	var cmd []string
	switch src.Address {
	case "":
		c := j.attachProbe(src.Namespace, srcPod)
		cmd = []string{j.e.Kubectl, "--kubeconfig=" + j.e.Kubeconfig, "-n", src.Namespace, "exec", srcPod, "-c", c, "--", "timeout", "3"}
		if udp {
			cmd = append(cmd, "nslookup", "kubernetes.default.svc.cluster.local", addr)
		} else {
			cmd = append(cmd, "nc", "-w", "2", addr, strconv.Itoa(port))
		}
	case netpolicy.AddressNode, netpolicy.AddressExternal:
		if udp {
			return "", " (not probed: UDP from an address)"
		}
		cmd = []string{"timeout", "3", "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", addr, port)}
		if src.Address == netpolicy.AddressNode {
			cmd = append([]string{"nsenter", "--net=/run/netns/sgc-node" + strconv.Itoa(len(j.e.NodeIPs)), "--"}, cmd...)
		}
	default:
		return "", " (not probed: the source is the API server)"
	}
	out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
	if err != nil {
		j.t.Logf("probe %s -> %s %s:%d refused: %v %s", f.From, f.To, addr, port, err, strings.TrimSpace(string(out)))
		return "refuse", ""
	}
	return "allow", ""
}

// podOf names a running pod of p, other than not.
func (j *journey) podOf(p netpolicy.MatrixPeer, not string) string {
	var sel []string
	for k, v := range p.Labels {
		sel = append(sel, k+"="+v)
	}
	sort.Strings(sel)
	out, err := j.kubectl("-n", p.Namespace, "get", "pods", "-l", strings.Join(sel, ","),
		"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}")
	if err != nil {
		return ""
	}
	for _, name := range strings.Fields(out) {
		if name != not {
			return name
		}
	}
	return ""
}

// addressOf is where a flow to dst is sent: another pod of dst's kind,
// a node's address, or the API server's.
func (j *journey) addressOf(dst netpolicy.MatrixPeer, f netpolicy.Flow, srcPod string) (string, int) {
	switch dst.Address {
	case netpolicy.AddressNode:
		return j.e.NodeIPs[0], int(f.Port)
	case netpolicy.AddressAPIServer:
		// The kubernetes Service, as the components reach it.
		ip, _ := j.kubectl("-n", "default", "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}")
		return ip, int(f.Port)
	case "":
		pod := j.podOf(dst, srcPod)
		if pod == "" {
			return "", 0
		}
		ip, _ := j.kubectl("-n", dst.Namespace, "get", "pod", pod, "-o", "jsonpath={.status.podIP}")
		return ip, int(f.Port)
	}
	return "", 0
}

// attachProbe adds an ephemeral busybox container to pod once and returns
// its name: probes then leave from the pod's own address, with the pod's
// own labels, as the enforcer sees the real component.
func (j *journey) attachProbe(ns, pod string) string {
	const name = "netprobe"
	if j.probes == nil {
		j.probes = map[string]bool{}
	}
	if j.probes[ns+"/"+pod] {
		return name
	}
	custom := filepath.Join(j.t.TempDir(), "probe.json")
	if err := os.WriteFile(custom, []byte(`{"securityContext":{"runAsUser":65534,"runAsNonRoot":true,"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}`), 0o644); err != nil {
		j.t.Fatal(err)
	}
	image := "sandgate.local/busybox:" + envOr("VERSION", "dev")
	if out, err := j.kubectl("-n", ns, "debug", pod, "-c", name, "--image", image, "--image-pull-policy", "IfNotPresent",
		"--profile", "restricted", "--custom", custom, "--", "sleep", "3600"); err != nil {
		j.t.Fatalf("attach a probe container to %s/%s: %v %s", ns, pod, err, out)
	}
	testkit.Within(j.t, time.Minute, "the probe container in "+pod+" running", func() bool {
		out, _ := j.kubectl("-n", ns, "get", "pod", pod, "-o", `jsonpath={.status.ephemeralContainerStatuses[?(@.name=="netprobe")].state.running}`)
		return out != ""
	})
	j.probes[ns+"/"+pod] = true
	return name
}

// startStranger runs a pod of some other workload with the matrix's
// other-pod labels, to probe from.
func (j *journey) startStranger(p netpolicy.MatrixPeer) {
	if p.Namespace == "" {
		return
	}
	var labels []string
	for k, v := range p.Labels {
		labels = append(labels, k+"="+v)
	}
	sort.Strings(labels)
	image := "sandgate.local/busybox:" + envOr("VERSION", "dev")
	if out, err := j.kubectl("-n", p.Namespace, "run", "stranger", "--image", image, "--image-pull-policy", "IfNotPresent",
		"--labels", strings.Join(labels, ","), "--restart", "Never", "--command", "--", "sleep", "3600"); err != nil {
		j.t.Fatalf("start a stranger pod: %v %s", err, out)
	}
	if out, err := j.kubectl("-n", p.Namespace, "wait", "--for=condition=Ready", "pod/stranger", "--timeout=120s"); err != nil {
		j.t.Fatalf("the stranger pod is not ready: %v %s", err, out)
	}
}
