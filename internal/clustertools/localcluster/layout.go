package localcluster

import (
	"encoding/binary"
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

// Addresses of the cluster, each derived from its range. Nothing outside
// the bridge and the nodes' namespaces carries them.
var (
	// NodeNet is the bridge's network: the host has its first address,
	// node i the one after the host's plus i-1.
	NodeNet = netip.MustParsePrefix("10.200.0.0/24")
	// PodNet holds every node's pod range, the /24 numbered i for node i.
	PodNet = netip.MustParsePrefix("10.244.0.0/16")
	// ServiceNet is the Services' range.
	ServiceNet = netip.MustParsePrefix("10.96.0.0/16")

	// HostAddr is the host's address on the bridge, where the API server
	// listens.
	HostAddr = addrIn(NodeNet, 1)
	// DNSAddr is the kube-dns Service's cluster IP, the tenth of the range.
	DNSAddr = addrIn(ServiceNet, 10)
)

// addrIn is the address n places after the first of the IPv4 range p.
func addrIn(p netip.Prefix, n uint32) netip.Addr {
	a := p.Addr().As4()
	binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(a[:])+n)
	return netip.AddrFrom4(a)
}

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
	return node{
		index:  i,
		name:   name,
		ip:     addrIn(NodeNet, 1+uint32(i)),
		podNet: netip.PrefixFrom(addrIn(PodNet, uint32(i)<<8), 24),
		dir:    filepath.Join(p.Data, name),
	}
}

func (n node) netns() string     { return fmt.Sprintf("%snode%d", netnsPrefix, n.index) }
func (n node) netnsPath() string { return "/run/netns/" + n.netns() }
func (n node) veth() string      { return fmt.Sprintf("%s%d", vethPrefix, n.index) }
func (n node) path(parts ...string) string {
	return filepath.Join(append([]string{n.dir}, parts...)...)
}
