package nodeproxy

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/sandgate/sandgate/internal/activity"
)

// TestActivitySender: activity reports go to ActivityPath on the internal
// base with the ServiceAccount token, and every answer, 5xx included,
// comes back as its status for the reporter to judge, the JWKS version it
// names passed on to JWKSPublished; only no answer is an error.
func TestActivitySender(t *testing.T) {
	for _, status := range []int{http.StatusNoContent, http.StatusUnauthorized, http.StatusServiceUnavailable} {
		var path, authz string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			path, authz = r.URL.Path, r.Header.Get("Authorization")
			w.Header().Set(activity.JWKSVersionHeader, "v-"+strconv.Itoa(status))
			w.WriteHeader(status)
		}))
		api := testAuthClient(t, srv.URL)
		var published []string
		api.jwksPublished = func(v string) { published = append(published, v) }
		got, err := api.PostReport(t.Context(), []byte(`{}`))
		srv.Close()
		if err != nil || got != status {
			t.Errorf("PostReport answered %d: %d, %v", status, got, err)
		}
		if path != DefaultActivityPath || authz != "Bearer sa-token" {
			t.Errorf("report went to %q with %q", path, authz)
		}
		if want := "v-" + strconv.Itoa(status); len(published) != 1 || published[0] != want {
			t.Errorf("answer %d: JWKS versions published %q, want [%s]", status, published, want)
		}
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	if _, err := testAuthClient(t, srv.URL).PostReport(t.Context(), []byte(`{}`)); err == nil {
		t.Error("PostReport to a closed server: no error")
	}
}

func testAuthClient(t *testing.T, base string) *authClient {
	t.Helper()
	m, err := newMetrics(nil, gauges{openStreams: func() int { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{AuthAPI: base, ServiceAccountToken: func() (string, error) { return "sa-token", nil }}.withDefaults()
	var d net.Dialer
	return newAuthClient(o, m, func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	})
}
