package testkit

import (
	"net"
	"net/http"
	"testing"
)

// FreeAddr is a loopback host:port that was free when picked, for a
// process that binds it itself.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Status is the status of a GET of url, 0 when the request fails.
func Status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
