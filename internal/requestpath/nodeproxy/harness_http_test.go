package nodeproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/sim/agentapp"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// url is node's address for path.
func (h *harness) url(nodeName, path string) string {
	return "http://" + h.nodes[nodeName].addr + path
}

// get sends a browser-like GET with Host testHost and the given headers.
func (h *harness) get(nodeName, path string, hdr map[string]string) *http.Response {
	h.t.Helper()
	return h.do(http.MethodGet, nodeName, path, nil, hdr)
}

func (h *harness) do(method, nodeName, path string, body io.Reader, hdr map[string]string) *http.Response {
	h.t.Helper()
	return h.send(h.client, testkit.Request{Method: method, URL: h.url(nodeName, path), Header: hdr, Body: body})
}

// send sends r through client with Host testHost, unless r's headers name
// another, and closes the response's body when the test ends.
func (h *harness) send(client *http.Client, r testkit.Request) *http.Response {
	h.t.Helper()
	r.Host = testHost
	resp := r.Send(h.t, client)
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// cookie is the Cookie header carrying tok as the session.
func cookie(tok string) string { return DefaultCookieName + "=" + tok }

// readBody reads and closes resp's body.
func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// echo decodes an /api/echo reply.
func echo(t testing.TB, resp *http.Response) agentapp.Echo {
	t.Helper()
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("echo status %d: %s", resp.StatusCode, body)
	}
	var e agentapp.Echo
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("echo body %q: %v", body, err)
	}
	return e
}

// rawRequest writes a request verbatim to node and returns the response's
// status line (or "" when the connection closes first).
func (h *harness) rawRequest(nodeName, raw string) string {
	h.t.Helper()
	return rawStatus(h.t, h.nodes[nodeName].addr, raw)
}

// rawStatus writes raw to addr and returns the status line of the answer.
func rawStatus(t testing.TB, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return statusLine(c, raw)
}

// dialFrom opens a connection to addr from the local address from, closed
// when the test ends.
func dialFrom(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return c
}

// statusLine writes raw to c and returns the status line of the answer,
// "" when the connection closes first.
func statusLine(c net.Conn, raw string) string {
	io.WriteString(c, raw)
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

// stoppingProxy is a second proxy on node-a's collaborators, with
// modify's changes, serving on ln and known as node "stopping", for a test
// that shuts it down: cancel starts the shutdown and done yields Serve's
// return. Cleanup stops it and waits for Serve.
func (h *harness) stoppingProxy(ln net.Listener, modify func(*Options)) (p *Proxy, cancel func(), done <-chan error) {
	h.t.Helper()
	o := h.nodes["node-a"].proxy.opts
	o.Registerer, o.Gatherer = nil, nil
	o.Logger = slog.New(slog.NewJSONHandler(h.logs, nil))
	if modify != nil {
		modify(&o)
	}
	if err := o.Validate(); err != nil {
		h.t.Fatal(err)
	}
	p, err := New(o)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		served <- p.Serve(ctx, ln)
	}()
	h.t.Cleanup(func() {
		stop()
		<-finished
	})
	h.nodes["stopping"] = &node{name: "stopping", proxy: p, addr: ln.Addr().String()}
	return p, stop, served
}
