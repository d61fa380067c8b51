package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"text/template"
)

// nodeConfig is what a node's configuration files are written from.
type nodeConfig struct {
	Name, IP, PodNet, PodNetAll, DNS, Domain string
	Dir, CgroupRoot, PauseImage, Runc        string
	CNIBin                                   string
}

var configTemplates = map[string]string{
	// containerd 2.x, version 3 configuration: CRI with runc from the
	// distribution, the CNI plugins, a local pause image (no registry is
	// reachable), and pod network namespaces under its own state dir.
	"containerd.toml": `version = 3
root = "{{.Dir}}/containerd"
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[ttrpc]
  address = "/run/containerd/containerd.sock.ttrpc"

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '{{.PauseImage}}'

  [plugins.'io.containerd.cri.v1.runtime']
    # The machine's sandbox withholds CAP_SYS_RESOURCE: runc may not
    # lower oom_score_adj below the runtime's own.
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '{{.Runc}}'
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['{{.CNIBin}}']
      conf_dir = '{{.Dir}}/config/cni'

  # NRI's socket defaults to /var/run/nri/nri.sock on the host: two nodes'
  # containerds starting together would remove and bind each other's.
  [plugins.'io.containerd.nri.v1.nri']
    socket_path = '/run/containerd/nri/nri.sock'
`,
	"cni/10-sandgate.conflist": `{
  "cniVersion": "1.0.0",
  "name": "sandgate",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "{{.PodNet}}"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`,
	"kubelet.yaml": `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {{.IP}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: {{.CgroupRoot}}
failCgroupV1: false
failSwapOn: false
podCIDR: {{.PodNet}}
maxPods: 40
clusterDNS: [{{.DNS}}]
clusterDomain: {{.Domain}}
resolvConf: {{.Dir}}/config/resolv.conf
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: {{.Dir}}/config/ca.crt}
authorization: {mode: Webhook}
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
`,
	"kube-proxy.yaml": `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: {{.Dir}}/config/kube-proxy.kubeconfig
mode: iptables
clusterCIDR: {{.PodNetAll}}
hostnameOverride: {{.Name}}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  # A network namespace cannot set the machine-wide nf_conntrack_max.
  maxPerCore: 0
`,
	// Pods with dnsPolicy Default (CoreDNS) get no upstream: cluster DNS
	// answers for the cluster domain and forwards nowhere.
	"resolv.conf": "nameserver 127.0.0.1\noptions ndots:1\n",
}

// writeNodeConfigs writes node n's containerd, CNI, kubelet and kube-proxy
// configuration under its config directory.
func writeNodeConfigs(n node, pauseImage, runc, cniBin string) error {
	c := nodeConfig{
		Name: n.name, IP: n.ip.String(), PodNet: n.podNet.String(), PodNetAll: PodNet.String(),
		DNS: DNSAddr.String(), Domain: ClusterDomain, Dir: n.dir, CgroupRoot: nodeCgroup(n.name),
		PauseImage: pauseImage, Runc: runc, CNIBin: cniBin,
	}
	for name, text := range configTemplates {
		t, err := template.New(name).Option("missingkey=error").Parse(text)
		if err != nil {
			return fmt.Errorf("parse the %s template: %w", name, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, c); err != nil {
			return fmt.Errorf("render %s: %w", name, err)
		}
		path := n.path("config", name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}
