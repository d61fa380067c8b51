package testkit

import (
	"io"
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

// Request is an HTTP request a test sends.
type Request struct {
	Method, URL string
	// Host, when set, is the request's Host; a "Host" entry in Header
	// overrides it.
	Host   string
	Header map[string]string
	Body   io.Reader
}

// Send sends r through client and fails the test when no response comes.
func (r Request) Send(t testing.TB, client *http.Client) *http.Response {
	t.Helper()
	req, err := http.NewRequest(r.Method, r.URL, r.Body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Host != "" {
		req.Host = r.Host
	}
	for k, v := range r.Header {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
