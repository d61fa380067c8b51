// Package connlimit bounds the connections one client address holds open
// to a listener: past its share a new connection is closed on accept.
package connlimit

import (
	"net"
	"net/netip"
	"sync"

	"github.com/sandgate/sandgate/internal/clientaddr"
)

// Options configures a Limit.
type Options struct {
	// Max is how many connections one client may hold open. Required.
	Max int
	// Key is the client an address counts for; nil is clientaddr.Key (an
	// IPv4 address or an IPv6 /64).
	Key func(netip.Addr) netip.Prefix
	// Exempt names addresses that carry many clients and are not counted;
	// nil exempts none.
	Exempt func(netip.Addr) bool
}

// Limit counts open connections per client address.
type Limit struct {
	max    int
	key    func(netip.Addr) netip.Prefix
	exempt func(netip.Addr) bool

	open Counter[netip.Prefix]
}

// New returns a Limit of o.Max connections per client.
func New(o Options) *Limit {
	if o.Key == nil {
		o.Key = clientaddr.Key
	}
	if o.Exempt == nil {
		o.Exempt = func(netip.Addr) bool { return false }
	}
	return &Limit{max: o.Max, key: o.Key, exempt: o.Exempt}
}

// Address counts each address on its own: a pod IP, where clientaddr.Key
// would put every pod of an IPv6 node's /64 together.
func Address(a netip.Addr) netip.Prefix {
	return netip.PrefixFrom(a, a.BitLen())
}

// Acquire counts a connection from remote and reports whether it may stay
// open; counted says whether Release must be called for key. A connection
// that is not TCP, or from an exempt address, is not counted.
func (l *Limit) Acquire(remote net.Addr) (key netip.Prefix, counted, ok bool) {
	ta, isTCP := remote.(*net.TCPAddr)
	if !isTCP {
		return netip.Prefix{}, false, true
	}
	addr, _ := netip.AddrFromSlice(ta.IP)
	addr = addr.Unmap()
	if !addr.IsValid() || l.exempt(addr) {
		return netip.Prefix{}, false, true
	}
	key = l.key(addr)
	if !l.open.Take(key, l.max) {
		return key, false, false
	}
	return key, true, true
}

// Release forgets a connection Acquire counted; a client that holds
// nothing is forgotten.
func (l *Limit) Release(key netip.Prefix) { l.open.Give(key) }

// Listener applies l to ln: a connection past its client's share is
// closed as soon as it is accepted, and one that is counted gives its
// place back when closed.
func (l *Limit) Listener(ln net.Listener) net.Listener { return listener{ln, l} }

type listener struct {
	net.Listener
	limit *Limit
}

func (l listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, counted, ok := l.limit.Acquire(c.RemoteAddr())
		if !ok {
			c.Close()
			continue
		}
		if !counted {
			return c, nil
		}
		return &conn{Conn: c, limit: l.limit, key: key}, nil
	}
}

// conn is a counted connection.
type conn struct {
	net.Conn
	limit *Limit
	key   netip.Prefix
	once  sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() { c.limit.Release(c.key) })
	return c.Conn.Close()
}
