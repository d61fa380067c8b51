// Package baseline is the plain reverse proxy the node proxy is compared
// with: net/http and httputil.ReverseProxy, stripping /u/<user> and
// nothing else (no authentication, lookup, header policy or logging).
package baseline

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
)

// New returns a handler that forwards /u/<user>/<path> to app/<path>.
func New(app *url.URL) http.Handler {
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(app)
			r.Out.URL.Path = stripUser(r.In.URL.Path)
			r.Out.URL.RawPath = ""
			r.Out.Host = r.In.Host
		},
		Transport: &http.Transport{
			MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute,
			DisableCompression: true,
		},
		FlushInterval: -1,
	}
}

// stripUser turns /u/<user>/<rest> into /<rest>.
func stripUser(p string) string {
	rest, ok := strings.CutPrefix(p, "/u/")
	if !ok {
		return p
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return "/"
}
