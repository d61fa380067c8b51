package nodeproxy

import (
	"github.com/valyala/fasthttp"
)

// toAuthAPI forwards a request outside /u/ to the auth API, so the browser
// sees one origin. The request keeps its Host, cookies and credentials;
// X-Forwarded-For gets the peer appended, and identity headers pass only
// from trusted proxies. The response passes through, Set-Cookie included.
func (p *Proxy) toAuthAPI(ctx *fasthttp.RequestCtx, x *exchange) {
	x.upstream = upstreamAuthAPI
	b, err := p.readBody(ctx, x)
	if err != nil {
		p.fail(ctx, x, err)
		return
	}
	defer b.release()
	trusted := p.trustedPeer(x.peer, false)
	uri := p.authBase + string(ctx.Request.Header.RequestURI())
	resp, err := p.roundTrip(ctx, uri, b, func(h *fasthttp.RequestHeader) {
		copyForAuthAPI(h, &ctx.Request.Header, trusted)
		xff := x.peer.String()
		if v := ctx.Request.Header.Peek("X-Forwarded-For"); len(v) > 0 && printable(v) && len(v) < maxForwardedFor {
			xff = string(v) + ", " + xff
		}
		h.Set("X-Forwarded-For", xff)
		h.Set("X-Forwarded-Proto", x.fwd.proto)
		h.Set("X-Forwarded-Host", x.fwd.host)
	})
	if err != nil {
		p.fail(ctx, x, err)
		return
	}
	p.respond(ctx, x, resp, respPolicy{keepCookies: true})
}

// copyForAuthAPI copies client headers for the auth API: all but hop-by-hop
// ones and the hop marker; identity headers only from a trusted peer.
func copyForAuthAPI(dst, src *fasthttp.RequestHeader, trusted bool) {
	conn := connectionTokens(src)
	var buf [maxHeaderName]byte
	for k, v := range src.All() {
		name := lower(&buf, k)
		switch {
		case hopByHop[string(name)], listed(conn, name), string(name) == "host", string(name) == "content-length",
			string(name) == "expect", hasPrefix(name, "x-sandgate-"):
			continue
		case !trusted && (string(name) == "forwarded" || string(name) == "x-real-ip" || identityName(name)):
			continue
		}
		dst.AddBytesKV(k, v)
	}
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }
