package testkit

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	defer srv.Close()
	if got := Status(srv.URL); got != http.StatusTeapot {
		t.Errorf("Status of a server answering 418: %d", got)
	}
	if got := Status("http://" + FreeAddr(t)); got != 0 {
		t.Errorf("Status where nothing listens: %d, want 0", got)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestRequestSend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Seen", r.Method+"|"+r.Host+"|"+r.Header.Get("X-Test"))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		r    Request
		want string
	}{
		{"the URL's host", Request{Method: http.MethodGet, URL: srv.URL, Header: map[string]string{"X-Test": "a"}}, "GET|" + srv.Listener.Addr().String() + "|a"},
		{"Host", Request{Method: http.MethodPost, URL: srv.URL, Host: "h.test"}, "POST|h.test|"},
		{"a Host header over Host", Request{Method: http.MethodGet, URL: srv.URL, Host: "h.test", Header: map[string]string{"host": "other.test"}}, "GET|other.test|"},
	} {
		resp := tc.r.Send(t, srv.Client())
		resp.Body.Close()
		if got := resp.Header.Get("Seen"); got != tc.want {
			t.Errorf("%s: server saw %q, want %q", tc.name, got, tc.want)
		}
	}
}
