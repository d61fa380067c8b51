package nodeproxy

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/valyala/fasthttp"
)

// receivedHop is the claim of a request that arrived as a hop to this
// node, read from the request itself.
func (g *guard) receivedHop(ctx *fasthttp.RequestCtx, r route) hopClaim {
	h := &ctx.Request.Header
	all := func(name string) string {
		var vs []string
		for _, v := range h.PeekAll(name) {
			vs = append(vs, string(v))
		}
		return strings.Join(vs, "\n")
	}
	return hopClaim{
		method: string(ctx.Method()), uri: string(ctx.RequestURI()), host: string(ctx.Host()), user: r.user,
		from: string(h.Peek(hopHeader)), to: g.nodeName,
		xff: all("X-Forwarded-For"), proto: all("X-Forwarded-Proto"), fwdHost: all("X-Forwarded-Host"),
	}
}

// hopTrust decides, for one request, whose forwarded headers count along
// the X-Forwarded-For chain.
type hopTrust struct {
	net   network
	keyed bool // a hop key is set
	peer  netip.Addr
	// hop: the request carries the hop header on a /u/ route.
	hop bool
	// vouched: with a hop key, its proof verified.
	vouched bool
}

// trusted reports whether a's forwarded headers count. With a hop key,
// the direct peer of a hop counts by its proof alone, never by its
// address (a configured proxy's included); any other address counts when
// it is a configured proxy (an ingress earlier in the chain). Without a
// hop key: a configured proxy, or any node address on a hop (the source
// address is all there is).
func (t hopTrust) trusted(a netip.Addr) bool {
	switch {
	case t.keyed && t.hop && a == t.peer:
		return t.vouched
	case t.net.proxy(a):
		return true
	case t.keyed:
		return false
	default:
		return t.hop && t.net.node(a)
	}
}

// checkHop verifies an incoming hop's proof when a hop key is set,
// counts the hop by result and logs a refusal.
func (g *guard) checkHop(ctx *fasthttp.RequestCtx, r route, peer netip.Addr) bool {
	if g.hopAuth == nil {
		g.m.hops.WithLabelValues("in", "unverified").Inc()
		return false
	}
	err := g.hopAuth.verify(string(ctx.Request.Header.Peek(hopAuthHeader)), g.receivedHop(ctx, r))
	if err != nil {
		g.m.hops.WithLabelValues("in", "refused").Inc()
		g.log.Warn("hop refused; handled as a client's request", "peer", peer.String(), "err", fmt.Errorf("verify hop: %w", err))
		return false
	}
	g.m.hops.WithLabelValues("in", "authenticated").Inc()
	return true
}
