package nodeproxy

import (
	"github.com/valyala/fasthttp"
)

// stripIdentity removes the configured AuthProxyHeader, whatever its
// name, from a request whose identity is not proven (checkIdentity), so no
// stage and no upstream (the auth API above all) sees a user a client
// asserted. Names under
// identityPrefixes are dropped where headers are copied upstream.
func (p *Proxy) stripIdentity(h *fasthttp.RequestHeader) {
	if p.authProxyHeader != "" {
		h.Del(p.authProxyHeader)
	}
}
