package nodeproxy

import (
	"net"
	"net/netip"

	"github.com/sandgate/sandgate/internal/clientaddr"
)

// maxConnsPerClient bounds the connections one client address (an IPv4
// address or an IPv6 /64) holds open to a node proxy. A browser opens six
// per origin; several agent tabs with event streams and WebSockets, or an
// office behind one NAT, stay well below it. Trusted proxies and other
// nodes carry many clients and are exempt.
const maxConnsPerClient = 256

// connLimit counts open connections per client address.
type connLimit struct {
	max    int
	exempt func(netip.Addr) bool
	open   capped[netip.Prefix]
}

func newConnLimit(max int, exempt func(netip.Addr) bool) *connLimit {
	return &connLimit{max: max, exempt: exempt}
}

// acquire counts a connection from remote and reports whether it may stay
// open; counted says whether release must be called for key.
func (l *connLimit) acquire(remote net.Addr) (key netip.Prefix, counted, ok bool) {
	ta, isTCP := remote.(*net.TCPAddr)
	if !isTCP {
		return netip.Prefix{}, false, true
	}
	addr, _ := netip.AddrFromSlice(ta.IP)
	if !addr.IsValid() || l.exempt(addr.Unmap()) {
		return netip.Prefix{}, false, true
	}
	key = clientaddr.Key(addr)
	if !l.open.take(key, l.max) {
		return key, false, false
	}
	return key, true, true
}

// release forgets a connection acquire counted.
func (l *connLimit) release(key netip.Prefix) { l.open.give(key) }

// newClientListener is newListener with at most maxConnsPerClient
// connections open per client address; past it a new connection is closed
// at once.
func (p *Proxy) newClientListener(ln net.Listener) *listener {
	l := newListener(ln, p.opts.WriteTimeout)
	l.limit = newConnLimit(maxConnsPerClient, func(a netip.Addr) bool { return p.trustedProxy(a) || p.isNode(a) })
	return l
}
