package nodeproxy

import (
	"slices"

	"github.com/sandgate/sandgate/internal/requestpath/headerrule"
)

// headerRules are the node proxy's directions, built once in New from the
// header allowlist and the AuthProxyHeader. TestHeaderRules holds the
// table of all of them.
type headerRules struct {
	// toApp is a client's request to the app of a pod on this node, the
	// one direction the allowlist applies to; toPeer is the same request
	// to the proxy of the pod's node, which applies toApp itself.
	toApp, toPeer headerrule.Pair
	// toAuthAPI keeps identity headers out unless the SSO proxy proved
	// them (toAuthAPIAsserted).
	toAuthAPI, toAuthAPIAsserted *headerrule.Rule
	// fromApp is an app's response on the platform origin (path routing),
	// fromOwnOriginApp one on the user's own origin.
	fromApp, fromOwnOriginApp, fromAuthAPI *headerrule.Rule
}

// neverForwarded are request headers that no allowlist can let through to
// an app.
var neverForwarded = append([]string{
	"cookie", "authorization", "host", "content-length", "forwarded", "x-forwarded-user", "x-real-ip", "expect",
}, headerrule.HopByHop...)

// identityPrefixes start the names of client identity and hop headers that
// are never forwarded to an app either, and that only TrustedProxies (or,
// with AuthProxySecret, a request with the proof) may send: ours, and the
// user headers of common SSO proxies (oauth2-proxy, Authelia and
// Authentik's "Remote-", Apache's "X-Remote-", Pomerium, Cloudflare
// Access, Google IAP).
var identityPrefixes = []string{
	"x-forwarded-", "x-auth-request-", "x-sandgate-",
	"remote-", "x-remote-", "x-authentik-", "x-pomerium-", "cf-access-", "x-goog-authenticated-",
}

// ownPrefix starts the headers the node proxies send each other (movedHeader
// on a hop's answer): never an app's to send.
var ownPrefix = []string{"x-sandgate-"}

// bodyHeaders describe the forwarded body, so they pass even in allowlist
// mode.
var bodyHeaders = []string{"content-type", "content-encoding"}

// wsHandshakeHeaders are set by the WebSocket dialer itself.
var wsHandshakeHeaders = []string{
	"sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
	"sec-websocket-protocol", "sec-websocket-accept",
}

// sharedOriginHeaders act on a whole origin, not on the response that
// carries them. In path routing every agent shares the platform origin,
// so an app may not send them: Service-Worker-Allowed would let a service
// worker take over "/", NEL and Report-To would report every page of the
// origin to the app, Alt-Svc would move the origin's traffic elsewhere,
// and Strict-Transport-Security is the platform's to set.
// Cross-Origin-Opener-Policy: the auth API's token pages send
// same-origin so that no window an agent's script holds can reach them;
// an app page with same-origin too would share their browsing context
// group, and keep its handle on a token page it opened.
var sharedOriginHeaders = []string{
	"service-worker-allowed", "nel", "report-to", "alt-svc",
	"strict-transport-security", "cross-origin-opener-policy",
}

// siteHeaders act beyond the origin that sends them: Clear-Site-Data's
// "cookies" clears the cookies of the whole registrable domain, which all
// user origins share with the main one. No app may send them in either
// routing mode.
var siteHeaders = []string{"clear-site-data"}

// newHeaderRules builds the directions; authProxy is the AuthProxyHeader,
// an identity header whatever its name.
func newHeaderRules(allow []string, authProxy string) headerRules {
	toApp := neverForwarded
	if authProxy != "" {
		toApp = append(slices.Clip(toApp), authProxy)
	}
	fromUpstream := append([]string{"content-length"}, headerrule.HopByHop...)
	fromOwnOrigin := slices.Concat(fromUpstream, []string{"set-cookie"}, siteHeaders)
	authAPI := slices.Concat(headerrule.HopByHop, []string{"host", "content-length", "expect"})
	return headerRules{
		toApp: headerrule.NewPair(headerrule.Spec{Drop: toApp, DropPrefixes: identityPrefixes, Allow: allow, Always: bodyHeaders},
			wsHandshakeHeaders),
		toPeer: headerrule.NewPair(headerrule.Spec{Drop: toApp, DropPrefixes: identityPrefixes}, wsHandshakeHeaders),
		toAuthAPI: headerrule.New(headerrule.Spec{
			Drop: slices.Concat(authAPI, []string{"forwarded", "x-real-ip"}), DropPrefixes: identityPrefixes,
		}),
		toAuthAPIAsserted: headerrule.New(headerrule.Spec{Drop: authAPI, DropPrefixes: ownPrefix}),
		fromApp:           headerrule.New(headerrule.Spec{Drop: slices.Concat(fromOwnOrigin, sharedOriginHeaders), DropPrefixes: ownPrefix}),
		fromOwnOriginApp:  headerrule.New(headerrule.Spec{Drop: fromOwnOrigin, DropPrefixes: ownPrefix}),
		fromAuthAPI:       headerrule.New(headerrule.Spec{Drop: fromUpstream}),
	}
}
