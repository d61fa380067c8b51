package ssojourney

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// browser is an HTTP client with a cookie jar that reaches publicHost at
// oauth2-proxy's loopback address and follows redirects, as a browser does.
type browser struct {
	p      *ssoPlatform
	client *http.Client
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

func newBrowser(t *testing.T, p *ssoPlatform) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	var d net.Dialer
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, _ := net.SplitHostPort(addr); host == publicHost {
			addr = p.proxyAddr
		}
		return d.DialContext(ctx, network, addr)
	}
	tr := &http.Transport{DialContext: dial}
	t.Cleanup(tr.CloseIdleConnections)
	return &browser{p: p, client: &http.Client{Jar: jar, Transport: tr, Timeout: 60 * time.Second}, dial: dial}
}

// do sends a request for path on the public origin and returns the final
// status and body.
func (b *browser) do(t *testing.T, method, path string, form url.Values) (int, string) {
	t.Helper()
	return b.doWith(t, method, path, form, nil)
}

// doWith is do with more request headers.
func (b *browser) doWith(t *testing.T, method, path string, form url.Values, header map[string]string) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.p.origin()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.p.origin())
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// cookie returns the value of the jar's cookie name for the public origin.
func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.p.origin())
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// waitAgent polls user's agent page until the agent itself answers.
func (b *browser) waitAgent(t *testing.T, user string) {
	t.Helper()
	testkit.WithinNil(t, 90*time.Second, "agent of "+user+" answering", func() error {
		code, body := b.do(t, http.MethodGet, "/u/"+user+"/", nil)
		if code == http.StatusOK && strings.Contains(body, "DSH Web (simulated)") {
			return nil
		}
		return fmt.Errorf("%d %.300s", code, body)
	})
}

// websocketEcho opens user's agent WebSocket through oauth2-proxy and
// checks that a message comes back.
func (b *browser) websocketEcho(t *testing.T, user string) {
	t.Helper()
	u, _ := url.Parse(b.p.origin())
	d := websocket.Dialer{NetDialContext: b.dial, Jar: b.client.Jar, HandshakeTimeout: 30 * time.Second}
	c, resp, err := d.Dial("ws://"+u.Host+"/u/"+user+"/api/ws", http.Header{"Origin": {b.p.origin()}})
	if err != nil {
		status := ""
		if resp != nil {
			status = resp.Status
		}
		t.Fatalf("WebSocket through oauth2-proxy: %v %s", err, status)
	}
	defer c.Close()
	if err := c.WriteMessage(websocket.TextMessage, []byte("hello through sso")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, msg, err := c.ReadMessage()
	if err != nil || string(msg) != "hello through sso" {
		t.Fatalf("WebSocket echo: %q, %v", msg, err)
	}
	if err := c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")); err != nil {
		t.Fatal(err)
	}
}

// events reads user's agent SSE stream through oauth2-proxy until n data
// lines arrived.
func (b *browser) events(t *testing.T, user string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.p.origin()+"/u/"+user+"/api/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("SSE through oauth2-proxy: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	for got := 0; got < n; {
		if !sc.Scan() {
			t.Fatalf("SSE ended after %d events: %v", got, sc.Err())
		}
		if strings.HasPrefix(sc.Text(), "data:") {
			got++
		}
	}
}
