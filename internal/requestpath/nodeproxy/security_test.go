package nodeproxy

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

func TestCrossOriginUnsafeRequestsRefused(t *testing.T) {
	inRoutingModes(t, func(t *testing.T, e *appEnv) {
		own := e.origin("alice")
		for _, tt := range []struct {
			name   string
			method string
			hdr    map[string]string
			want   int
		}{
			{"POST from the agent's own origin", http.MethodPost, map[string]string{"Origin": own, "Sec-Fetch-Site": "same-origin"}, http.StatusOK},
			{"POST from the agent's own origin, upper case", http.MethodPost, map[string]string{"Origin": strings.ToUpper(own)}, http.StatusOK},
			{"POST without Origin (API client)", http.MethodPost, nil, http.StatusOK},
			{"GET from another user's origin", http.MethodGet, map[string]string{"Origin": e.origin("bob") + ".evil", "Sec-Fetch-Site": "cross-site"}, http.StatusOK},
			{"HEAD cross-site", http.MethodHead, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusOK},
			{"OPTIONS cross-site", http.MethodOptions, map[string]string{"Origin": "http://evil.test", "Sec-Fetch-Site": "cross-site"}, http.StatusOK},
			{"POST from bob's origin", http.MethodPost, map[string]string{"Origin": "http://bob." + securityUserDomain, "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
			{"POST from another site", http.MethodPost, map[string]string{"Origin": "http://evil.test"}, http.StatusForbidden},
			{"POST from an opaque origin", http.MethodPost, map[string]string{"Origin": "null"}, http.StatusForbidden},
			{"POST from the own host on another scheme", http.MethodPost, map[string]string{"Origin": strings.Replace(own, "http:", "https:", 1)}, http.StatusForbidden},
			{"POST same-site without Origin", http.MethodPost, map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
			{"DELETE cross-site without Origin", http.MethodDelete, map[string]string{"Sec-Fetch-Site": "Cross-Site"}, http.StatusForbidden},
			{"PUT from another site", http.MethodPut, map[string]string{"Origin": "http://evil.test"}, http.StatusForbidden},
			{"PATCH same-origin", http.MethodPatch, map[string]string{"Origin": own, "Sec-Fetch-Site": "same-origin"}, http.StatusOK},
		} {
			t.Run(tt.name, func(t *testing.T) {
				resp := e.request(tt.method, "alice", "/api/x", tt.hdr)
				body := readAll(t, resp)
				seen := e.app.requests()
				if resp.StatusCode != tt.want {
					t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tt.want)
				}
				if tt.want == http.StatusForbidden {
					if len(seen) != 0 {
						t.Errorf("the app saw the refused request: %v", seen)
					}
					if tt.method != http.MethodHead && !strings.Contains(body, "cross-origin") {
						t.Errorf("body %q does not say why", body)
					}
				}
			})
		}
	})
}

func TestCrossOriginWebSocketRefusedBeforeDial(t *testing.T) {
	inRoutingModes(t, func(t *testing.T, e *appEnv) {
		dial := func(origin, site string) (*http.Response, error) {
			b, path := e.browser("alice", "/ws")
			hdr := http.Header{"Cookie": {b["Cookie"]}, "Host": {b["Host"]}, "Origin": {origin}}
			if site != "" {
				hdr.Set("Sec-Fetch-Site", site)
			}
			d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
			c, resp, err := d.DialContext(context.Background(), "ws://"+e.h.nodes["node-a"].addr+path, hdr)
			if c != nil {
				c.Close()
			}
			return resp, err
		}
		if _, err := dial(e.origin("alice"), "same-origin"); err != nil {
			t.Fatalf("same-origin upgrade: %v", err)
		}
		if seen := e.app.requests(); !slices.Equal(seen, []string{"GET /ws"}) {
			t.Fatalf("same-origin upgrade reached the app as %v", seen)
		}
		for _, tt := range []struct{ origin, site string }{
			{"http://bob." + securityUserDomain, "same-site"},
			{"http://evil.test", "cross-site"},
			{e.origin("alice"), "cross-site"},
		} {
			resp, err := dial(tt.origin, tt.site)
			if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Errorf("upgrade from %s (%s): %v %v, want a plain 403", tt.origin, tt.site, resp, err)
			}
			if seen := e.app.requests(); len(seen) != 0 {
				t.Errorf("upgrade from %s dialled the app: %v", tt.origin, seen)
			}
		}
	})
}

func TestAppResponseHeaders(t *testing.T) {
	for _, tt := range []struct {
		name      string
		subdomain bool
		app       http.Header
		want      http.Header // nil value: absent
	}{
		{"path routing drops origin-wide headers", false, http.Header{
			"Service-Worker-Allowed": {"/"}, "Clear-Site-Data": {`"cookies", "storage"`}, "Nel": {`{"report_to":"x"}`},
			"Report-To": {`{"group":"x"}`}, "Alt-Svc": {`h2="evil.test:443"`}, "Strict-Transport-Security": {"max-age=1"},
			"Cross-Origin-Opener-Policy": {"same-origin"}, "X-App": {"kept"},
		}, http.Header{
			"Service-Worker-Allowed": nil, "Clear-Site-Data": nil, "Nel": nil, "Report-To": nil, "Alt-Svc": nil,
			"Strict-Transport-Security": nil, "Cross-Origin-Opener-Policy": nil, "X-App": {"kept"},
		}},
		{"subdomain routing drops site-wide headers only", true, http.Header{
			"Service-Worker-Allowed": {"/"}, "Clear-Site-Data": {`"cookies"`}, "Cross-Origin-Opener-Policy": {"same-origin"},
		}, http.Header{"Service-Worker-Allowed": {"/"}, "Clear-Site-Data": nil, "Cross-Origin-Opener-Policy": {"same-origin"}}},
		{"no framing policy of the app's own: frame-ancestors 'self'", false, http.Header{},
			http.Header{"Content-Security-Policy": {"frame-ancestors 'self'"}}},
		{"the app's CSP is left alone", true, http.Header{"Content-Security-Policy": {"default-src 'self'"}},
			http.Header{"Content-Security-Policy": {"default-src 'self'"}}},
		{"the app's X-Frame-Options stands", false, http.Header{"X-Frame-Options": {"DENY"}},
			http.Header{"X-Frame-Options": {"DENY"}, "Content-Security-Policy": nil}},
		{"no Cache-Control: private, Vary: Cookie", false, http.Header{},
			http.Header{"Cache-Control": {"private"}, "Vary": {"Cookie"}}},
		{"public becomes private", true, http.Header{"Cache-Control": {"public, max-age=600"}, "Vary": {"Accept-Encoding"}},
			http.Header{"Cache-Control": {"private, max-age=600"}, "Vary": {"Accept-Encoding, Cookie"}}},
		{"max-age alone gets private", false, http.Header{"Cache-Control": {"max-age=60"}},
			http.Header{"Cache-Control": {"private, max-age=60"}}},
		{"no-store stands", false, http.Header{"Cache-Control": {"no-store"}, "Vary": {"cookie, Accept"}},
			http.Header{"Cache-Control": {"no-store"}, "Vary": {"cookie, Accept"}}},
		{"private stands", true, http.Header{"Cache-Control": {"Private, max-age=5"}, "Vary": {"*"}},
			http.Header{"Cache-Control": {"Private, max-age=5"}, "Vary": {"*"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newAppEnv(t, tt.subdomain, nil)
			e.app.respondWith(tt.app)
			resp := e.request(http.MethodGet, "alice", "/page", nil)
			readAll(t, resp)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			for name, want := range tt.want {
				if got := resp.Header.Values(name); !slices.Equal(got, want) {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestServiceWorkerScriptOutsideAgentScope(t *testing.T) {
	inRoutingModes(t, func(t *testing.T, e *appEnv) {
		e.app.respondWith(http.Header{"Service-Worker-Allowed": {"/"}, "Content-Type": {"text/javascript"}})
		sw := map[string]string{"Service-Worker": "script", "Sec-Fetch-Dest": "serviceworker"}

		resp := e.request(http.MethodGet, "alice", "/sw.js", sw)
		readAll(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the agent's own worker script: %d", resp.StatusCode)
		}
		if got, want := resp.Header.Get("Service-Worker-Allowed"), map[bool]string{false: "", true: "/"}[e.subdomain]; got != want {
			t.Errorf("Service-Worker-Allowed %q, want %q: a worker of an agent on the platform origin stays under its /u/<user>/", got, want)
		}

		for _, path := range []string{"/sw.js", "/login", "/u/alice"} {
			hdr := map[string]string{"Host": testHost}
			for k, v := range sw {
				hdr[k] = v
			}
			resp := e.h.do(http.MethodGet, "node-a", path, nil, hdr)
			body := readAll(t, resp)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "service worker") {
				t.Errorf("worker script %s on the main origin: %d %q, want 403", path, resp.StatusCode, body)
			}
		}
	})
}
