package nodeproxy

import (
	"net/netip"

	"github.com/sandgate/sandgate/internal/clientaddr"
)

// network tells who a peer is: a configured proxy (TrustedProxies), whose
// forwarded and identity headers count, or a node (Peers).
type network struct {
	proxies []netip.Prefix
	peers   Peers
}

// proxy reports whether peer is a configured proxy.
func (n network) proxy(peer netip.Addr) bool { return clientaddr.In(peer, n.proxies) }

// node reports whether a is a node's address.
func (n network) node(a netip.Addr) bool {
	return n.peers != nil && n.peers.IsNodeIP(a.String())
}
