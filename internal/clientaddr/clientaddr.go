package clientaddr

import (
	"net/netip"
	"strings"
)

// Resolve returns the client address of a request that arrived from peer
// carrying the X-Forwarded-For header lines xff (in order): peer itself
// unless it is in trusted, otherwise the rightmost X-Forwarded-For entry
// that is not in trusted. An entry that is not an IP address ends the walk
// at the nearest trusted hop, since nobody trusted vouches for it. When
// every entry is trusted, the leftmost is the client. Addresses are
// returned unmapped and without zone.
func Resolve(peer netip.Addr, xff []string, trusted []netip.Prefix) netip.Addr {
	return Walk(peer, xff, func(a netip.Addr) bool { return In(a, trusted) })
}

// Walk is Resolve with trust decided by a function, for callers whose
// trusted hops are not only prefixes (another node's proxy).
func Walk(peer netip.Addr, xff []string, trusted func(netip.Addr) bool) netip.Addr {
	client := normal(peer)
	if !client.IsValid() || !trusted(client) {
		return client
	}
	for i := len(xff) - 1; i >= 0; i-- {
		line := xff[i]
		for line != "" {
			entry := line
			if j := strings.LastIndexByte(line, ','); j >= 0 {
				entry, line = line[j+1:], line[:j]
			} else {
				line = ""
			}
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			a, err := netip.ParseAddr(entry)
			if err != nil {
				return client
			}
			client = normal(a)
			if !trusted(client) {
				return client
			}
		}
	}
	return client
}

// In reports whether a is in one of prefixes.
func In(a netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Key is the bucket a limiter counts a client in: the address itself for
// IPv4, its /64 for IPv6, since one subscriber gets at least a /64. The
// zero Addr gets the zero Prefix.
func Key(a netip.Addr) netip.Prefix {
	a = normal(a)
	if !a.IsValid() {
		return netip.Prefix{}
	}
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits) // bits fit both families
	return p
}

func normal(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }
