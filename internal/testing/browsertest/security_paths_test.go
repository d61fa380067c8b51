package browsertest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// securityDomain is USER_DOMAIN of the subdomain case.
const securityDomain = userDomain

// pageApp is an agent app that serves whatever page and headers the test
// gives it for a path, and records the requests that reach it.
type pageApp struct {
	mu    sync.Mutex
	pages map[string]appPage
	seen  []string
}

type appPage struct {
	header http.Header
	body   string
}

func (a *pageApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.seen = append(a.seen, r.Method+" "+r.URL.Path)
	pg, ok := a.pages[r.URL.Path]
	a.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	for k, v := range pg.header {
		w.Header()[k] = v
	}
	fmt.Fprint(w, pg.body)
}

func (a *pageApp) serve(path, contentType, body string, extra http.Header) {
	h := http.Header{"Content-Type": {contentType}}
	for k, v := range extra {
		h[k] = v
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pages[path] = appPage{header: h, body: body}
}

func (a *pageApp) saw(request string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.seen, request)
}

// tokenVerifier accepts "<user>" as a session and "<user>|<origin>" as an
// origin session: this test is about what reaches the app, not about
// tokens.
type tokenVerifier struct{}

func (tokenVerifier) Verify(tok string) (jwt.Claims, error) {
	now := time.Now()
	user, origin, _ := strings.Cut(tok, "|")
	return jwt.Claims{User: user, Origin: origin, SessionID: account.NewSessionID(accountUID(user)), Epoch: 1,
		AuthTime: now, IssuedAt: now, Expiry: now.Add(time.Hour)}, nil
}

// accountUID is the claim UID of user's account.
func accountUID(user string) string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", len(user))
}

func (v tokenVerifier) VerifyIgnoringExpiry(tok string) (jwt.Claims, error) { return v.Verify(tok) }

type users map[string]string // user -> app address

func (u users) Lookup(user string) (informer.Entry, error) {
	addr, ok := u[user]
	if !ok {
		return informer.Entry{}, informer.ErrNoAccount
	}
	return informer.Entry{
		Account: account.Account{User: user, UID: accountUID(user), Epoch: 1},
		Route: informer.Route{State: informer.StateReady, Sandbox: "sb-" + user, Node: "n", Local: true,
			Pod: informer.Pod{Namespace: "ns", Name: "sb-" + user, UID: "uid-" + user, Container: "dsh", Addr: addr}},
	}, nil
}

type fixedCookie struct{}

func (fixedCookie) Cookie(context.Context, handshake.Target) (string, error) {
	return "dsh-auth-x=1", nil
}
func (fixedCookie) Refresh(context.Context, handshake.Target, string) (string, error) {
	return "dsh-auth-x=1", nil
}

// startGuardedProxy runs one node proxy, in mode, in front of app for
// alice and bob, and returns its port.
func startGuardedProxy(t *testing.T, mode userorigin.Mode, app *pageApp) string {
	t.Helper()
	listen := func(h http.Handler) net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: h}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return ln
	}
	appAddr := listen(app).Addr().String()
	authAddr := listen(http.NotFoundHandler()).Addr().String()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	px, err := nodeproxy.New(nodeproxy.Options{
		NodeName: "n", Directory: users{"alice": appAddr, "bob": appAddr}, Verifier: tokenVerifier{},
		Handshaker: fixedCookie{}, AuthAPI: "http://" + authAddr,
		RoutingMode: mode, UserDomain: securityDomain, OriginVerifier: tokenVerifier{}, EntryVerifier: tokenVerifier{},
		PublicOrigin: "http://" + gatewayHost + ":" + port,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- px.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return port
}

// securityBrowser starts Chromium with the gateway host and every name
// under userDomain mapped to the proxy at 127.0.0.1, and returns a tab.
func securityBrowser(t *testing.T, port string) context.Context {
	t.Helper()
	addr := net.JoinHostPort("127.0.0.1", port)
	return startBrowser(t, &platform{nodes: []*platformNode{{addr: addr}, {addr: addr}}})
}

// setCookie sets a SameSite=Lax session cookie for origin (with port),
// as a login would have.
func setCookie(ctx context.Context, origin, name, value string) error {
	u, err := url.Parse(origin)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return err
	}
	_, err = chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{
		Name: name, Value: value, URL: origin, Path: "/", SameSite: network.CookieSameSiteLax, SourcePort: int64(port),
	})
	return err
}

// TestSecurityCrossUserFormPostRefused: in subdomain routing a page on
// bob's origin auto-submits a form to alice's agent. The origins are one
// site, so alice's SameSite=Lax origin cookie goes along; the node proxy
// must refuse the POST before it reaches alice's app.
func TestSecurityCrossUserFormPostRefused(t *testing.T) {
	app := &pageApp{pages: map[string]appPage{}}
	port := startGuardedProxy(t, userorigin.Subdomain, app)
	ctx := securityBrowser(t, port)
	alice := "http://alice." + securityDomain + ":" + port
	bob := "http://bob." + securityDomain + ":" + port
	app.serve("/attack", "text/html; charset=utf-8", `<!doctype html><html><body>
<form id="f" method="post" action="`+alice+`/api/messages" target="sink"><input name="text" value="planted"></form>
<iframe name="sink" id="sink"></iframe>
<script>
document.getElementById('sink').addEventListener('load', () => { document.body.dataset.done = 'yes'; }, {once: true});
document.getElementById('f').submit();
</script></body></html>`, nil)
	app.serve("/api/messages", "text/plain", "stored", nil)

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, c := range []struct{ url, value string }{{alice, "alice|" + alice}, {bob, "bob|" + bob}} {
		if err := setCookie(ctx, c.url, nodeproxy.DefaultOriginCookieName, c.value); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := navigateURL(ctx, bob+"/attack"); err != nil {
		t.Fatal(err)
	}
	if err := until(ctx, "the form's answer", `document.body.dataset.done === 'yes'`); err != nil {
		t.Fatal(err)
	}
	if app.saw("POST /api/messages") {
		t.Fatal("bob's page posted into alice's agent")
	}

	// The same form on alice's own origin goes through.
	if _, err := navigateURL(ctx, alice+"/attack"); err != nil {
		t.Fatal(err)
	}
	if err := until(ctx, "the form's answer", `document.body.dataset.done === 'yes'`); err != nil {
		t.Fatal(err)
	}
	if !app.saw("POST /api/messages") {
		t.Fatal("alice's own form post did not reach her agent")
	}
}

// TestSecurityServiceWorkerScopeConfined: in path routing an agent page
// registers a service worker over the whole platform origin, its script
// sent with Service-Worker-Allowed: /. The registration must fail, while
// one within the agent's own path still works.
func TestSecurityServiceWorkerScopeConfined(t *testing.T) {
	app := &pageApp{pages: map[string]appPage{}}
	port := startGuardedProxy(t, userorigin.Path, app)
	ctx := securityBrowser(t, port)
	// Loopback is a secure context, as service workers need.
	origin := "http://127.0.0.1:" + port
	app.serve("/sw.js", "text/javascript", "self.addEventListener('fetch', () => {});", http.Header{"Service-Worker-Allowed": {"/"}})
	app.serve("/", "text/html; charset=utf-8", `<!doctype html><html><body><script>
async function register(scope) {
  try { const r = await navigator.serviceWorker.register('sw.js', {scope}); return 'registered ' + r.scope; }
  catch (e) { return 'refused ' + e.name; }
}
(async () => {
  document.body.dataset.root = await register('/');
  document.body.dataset.own = await register('./');
})();
</script></body></html>`, nil)

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := setCookie(ctx, origin, nodeproxy.DefaultCookieName, "alice"); err != nil {
		t.Fatal(err)
	}

	if status, err := navigateURL(ctx, origin+"/u/alice/"); err != nil || status != http.StatusOK {
		body, _ := eval[string](ctx, `document.body.innerText`)
		t.Fatalf("agent page: %d %v %s", status, err, body)
	}
	if err := until(ctx, "both registrations", `document.body.dataset.own`); err != nil {
		html, _ := eval[string](context.Background(), `document.documentElement.outerHTML`)
		t.Fatalf("%v\n%s\napp saw %v", err, html, app.seen)
	}
	root, err := eval[string](ctx, `document.body.dataset.root`)
	if err != nil {
		t.Fatal(err)
	}
	own, err := eval[string](ctx, `document.body.dataset.own`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(root, "refused") {
		t.Errorf("service worker over the platform origin: %s", root)
	}
	if own != "registered "+origin+"/u/alice/" {
		t.Errorf("service worker within the agent's path: %s", own)
	}
}
