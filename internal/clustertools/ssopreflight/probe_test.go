package ssopreflight

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/account"
)

// TestProbe runs the forged-header probe against node proxy stand-ins: it
// fails one that believes the header in a login or on its landing page,
// and passes one that strips it or cannot be reached.
func TestProbe(t *testing.T) {
	user, _ := account.SSOUserName(probeIdentity)
	believed := func(r *http.Request) bool { return r.Header.Get("X-Forwarded-User") != "" }
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc // nil: nothing listens
		reason  string           // "" when the probe passes
	}{
		{"strips the header", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/" {
				_, _ = w.Write([]byte("<p>Sign in</p>"))
				return
			}
			w.WriteHeader(http.StatusUnauthorized)
		}, ""},
		{"a login believes the header", func(w http.ResponseWriter, r *http.Request) {
			if believed(r) && r.URL.Path == "/login" {
				http.SetCookie(w, &http.Cookie{Name: "dsh_gw_session", Value: "x"})
			}
			w.WriteHeader(http.StatusOK)
		}, "a login from this host"},
		{"the landing page believes the header, no account", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/" && believed(r) {
				_, _ = w.Write([]byte("<p>Continue as " + r.Header.Get("X-Forwarded-User") + "</p>"))
				return
			}
			w.WriteHeader(http.StatusUnauthorized)
		}, "offered its user " + user},
		{"unreachable", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &state{o: Defaults()}
			s.o.HTTPClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			if tc.handler != nil {
				srv := httptest.NewServer(tc.handler)
				defer srv.Close()
				s.o.ProbeURL = srv.URL
			} else {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				s.o.ProbeURL = "http://" + ln.Addr().String()
				ln.Close()
			}
			got := s.probe(t.Context(), "X-Forwarded-User")
			if (got == "") != (tc.reason == "") || !strings.Contains(got, tc.reason) {
				t.Errorf("probe = %q, want %q", got, tc.reason)
			}
		})
	}
}
