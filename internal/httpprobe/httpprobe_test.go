package httpprobe

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestOK(t *testing.T) {
	for _, tc := range []struct {
		status int
		ok     bool
	}{{http.StatusOK, true}, {http.StatusNoContent, false}, {http.StatusServiceUnavailable, false}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(tc.status) }))
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := OK(srv.Client(), req); (err == nil) != tc.ok {
			t.Errorf("status %d: error %v, want ok %v", tc.status, err, tc.ok)
		}
		srv.Close()
	}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil)
	if err := OK(http.DefaultClient, req); err == nil {
		t.Error("no server: no error")
	}
}
