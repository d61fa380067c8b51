package nodeproxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/fasthttp/websocket"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// hostileApp is an agent app that answers every request with the
// response headers the test gives it and records what reached it.
type hostileApp struct {
	addr string

	mu      sync.Mutex
	headers http.Header
	seen    []string // "METHOD path"
}

func startHostileApp(t *testing.T) *hostileApp {
	t.Helper()
	a := &hostileApp{headers: http.Header{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.addr = ln.Addr().String()
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.seen = append(a.seen, r.Method+" "+r.URL.Path)
		for k, v := range a.headers {
			w.Header()[k] = v
		}
		a.mu.Unlock()
		if websocket.IsWebSocketUpgrade(r) {
			if c, err := up.Upgrade(w, r, nil); err == nil {
				c.Close()
			}
			return
		}
		w.Write([]byte("ok"))
	})}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return a
}

// respondWith sets the headers of every later response.
func (a *hostileApp) respondWith(h http.Header) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.headers = h
}

// requests returns and forgets what reached the app.
func (a *hostileApp) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.seen
	a.seen = nil
	return out
}

// stubHandshaker hands out a fixed app cookie: the hostile app needs no
// launch token.
type stubHandshaker struct{}

func (stubHandshaker) Cookie(context.Context, handshake.Target) (string, error) {
	return "dsh-auth-x=1", nil
}

func (stubHandshaker) Refresh(context.Context, handshake.Target, string) (string, error) {
	return "dsh-auth-x=1", nil
}

// lateVerifier is the harness's verifier, looked up when used: Options
// are built before newHarness returns.
type lateVerifier struct{ h **harness }

func (v lateVerifier) Verify(tok string) (jwt.Claims, error) { return (*v.h).ver.Verify(tok) }

func (v lateVerifier) VerifyIgnoringExpiry(tok string) (jwt.Claims, error) {
	return (*v.h).ver.VerifyIgnoringExpiry(tok)
}

const securityUserDomain = "users.test"

// appEnv is one node proxy in front of hostile apps of alice and bob.
type appEnv struct {
	h         *harness
	app       *hostileApp
	subdomain bool
}

// inRoutingModes runs test as a subtest in path routing and in subdomain
// routing, each with an appEnv of its own.
func inRoutingModes(t *testing.T, test func(t *testing.T, e *appEnv)) {
	for _, mode := range []struct {
		name      string
		subdomain bool
	}{{"path routing", false}, {"subdomain routing", true}} {
		t.Run(mode.name, func(t *testing.T) { test(t, newAppEnv(t, mode.subdomain, nil)) })
	}
}

func newAppEnv(t *testing.T, subdomain bool, modify func(*Options)) *appEnv {
	t.Helper()
	var h *harness
	h = newHarness(t, harnessOpts{modify: func(o *Options) {
		o.Handshaker = stubHandshaker{}
		if subdomain {
			o.RoutingMode = userorigin.Subdomain
			o.UserDomain = securityUserDomain
			o.PublicOrigin = "http://" + testHost
			o.OriginVerifier = lateVerifier{&h}
			o.EntryVerifier = lateVerifier{&h}
		}
		if modify != nil {
			modify(o)
		}
	}})
	e := &appEnv{h: h, app: startHostileApp(t), subdomain: subdomain}
	for i, user := range []string{"alice", "bob"} {
		h.dir.set(user, informer.Entry{
			Account: account.Account{User: user, UID: fmt.Sprintf("00000000-0000-4000-8000-%012x", i), TokenHash: account.HashToken("tok-" + user), Epoch: 1},
			Route: informer.Route{
				State: informer.StateReady, Sandbox: "sb-" + user, Node: "node-a", NodeIP: "127.0.0.1", Local: true,
				Pod: informer.Pod{Namespace: testNS, Name: "sb-" + user, UID: fmt.Sprintf("uid-%d", i), Container: "dsh", Addr: e.app.addr},
			},
		})
	}
	return e
}

// origin is the browser origin of user's agent.
func (e *appEnv) origin(user string) string {
	if e.subdomain {
		return "http://" + user + "." + securityUserDomain
	}
	return "http://" + testHost
}

// browser is the Host and Cookie of user's browser on their agent's
// origin, and where path on that origin is on the node proxy.
func (e *appEnv) browser(user, path string) (map[string]string, string) {
	e.h.t.Helper()
	if !e.subdomain {
		return map[string]string{"Cookie": cookie(e.h.session(user)), "Host": testHost}, "/u/" + user + path
	}
	tok, err := e.h.signer.Sign(jwt.Claims{User: user, SessionID: e.h.sessionID(user), Epoch: 1, Origin: e.origin(user)})
	if err != nil {
		e.h.t.Fatal(err)
	}
	return map[string]string{"Cookie": DefaultOriginCookieName + "=" + tok, "Host": user + "." + securityUserDomain}, path
}

// request sends method path to user's agent as user's browser would, with
// extra headers.
func (e *appEnv) request(method, user, path string, extra map[string]string) *http.Response {
	e.h.t.Helper()
	hdr, path := e.browser(user, path)
	for k, v := range extra {
		hdr[k] = v
	}
	return e.h.do(method, "node-a", path, nil, hdr)
}
