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
