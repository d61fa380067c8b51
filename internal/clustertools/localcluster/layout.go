package localcluster

import (
	"fmt"
	"net/netip"
	"path/filepath"
)

// The fixed names and ranges of a local cluster. One cluster runs on a
// machine at a time: Up removes what a killed run left first.
const (
	// Bridge joins the host and the nodes.
	Bridge = "sgc0"
	// netnsPrefix starts each node's network namespace name.
	netnsPrefix = "sgc-"
	// vethPrefix starts the host side of each node's veth pair.
	vethPrefix = "sgcv"
	// nftTable guards the cluster's ranges (family inet).
	nftTable = "sandgate_cluster"
	// cgroupParent holds each node's cgroups in every v1 hierarchy.
	cgroupParent = "sandgate-cluster"
	// ClusterDomain is the Services' DNS domain.
	ClusterDomain = "cluster.local"
	// APIServerPort is where kube-apiserver listens on HostAddr.
	APIServerPort = 16443
)

// Addresses of the cluster. Nothing outside the bridge and the nodes'
// namespaces carries them.
var (
	// NodeNet is the bridge's network; the host is its first address.
	NodeNet = netip.MustParsePrefix("10.200.0.0/24")
	// HostAddr is the host's address on the bridge, where the API server
	// listens.
	HostAddr = netip.MustParseAddr("10.200.0.1")
	// PodNet holds every node's pod range, 10.244.<i>.0/24 for node i.
	PodNet = netip.MustParsePrefix("10.244.0.0/16")
	// ServiceNet is the Services' range.
	ServiceNet = netip.MustParsePrefix("10.96.0.0/16")
	// DNSAddr is the kube-dns Service's cluster IP.
	DNSAddr = netip.MustParseAddr("10.96.0.10")
)

// Paths holds the directories a cluster uses.
type Paths struct {
	// Data holds the control plane's and each node's files.
	Data string
}

// DefaultPaths are the directories make cluster uses.
var DefaultPaths = Paths{Data: "/var/lib/sandgate-cluster"}

// node is one node's names and addresses, from its index (1-based).
type node struct {
	index  int
	name   string
	ip     netip.Addr
	podNet netip.Prefix
	dir    string
}

func newNode(p Paths, i int) node {
	name := fmt.Sprintf("sandgate-node-%d", i)
	ip := HostAddr
	for range i {
		ip = ip.Next()
	}
	return node{
		index:  i,
		name:   name,
		ip:     ip,
		podNet: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i), 0}), 24),
		dir:    filepath.Join(p.Data, name),
	}
}

func (n node) netns() string     { return fmt.Sprintf("%snode%d", netnsPrefix, n.index) }
func (n node) netnsPath() string { return "/run/netns/" + n.netns() }
func (n node) veth() string      { return fmt.Sprintf("%s%d", vethPrefix, n.index) }
func (n node) path(parts ...string) string {
	return filepath.Join(append([]string{n.dir}, parts...)...)
}
