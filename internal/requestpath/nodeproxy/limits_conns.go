package nodeproxy

import (
	"net"
	"net/netip"
	"time"

	"github.com/sandgate/sandgate/internal/connlimit"
)

// maxConnsPerClient bounds the connections one client address (an IPv4
// address or an IPv6 /64) holds open to a node proxy. A browser opens six
// per origin; several agent tabs with event streams and WebSockets, or an
// office behind one NAT, stay well below it. Trusted proxies and other
// nodes carry many clients and are exempt.
const maxConnsPerClient = 256

// newClientListener is newListener with at most maxConnsPerClient
// connections open per client address; past it a new connection is closed
// at once.
func newClientListener(ln net.Listener, writeTimeout time.Duration, n network) *listener {
	l := newListener(ln, writeTimeout)
	l.limit = connlimit.New(connlimit.Options{Max: maxConnsPerClient, Exempt: func(a netip.Addr) bool { return n.proxy(a) || n.node(a) }})
	return l
}
