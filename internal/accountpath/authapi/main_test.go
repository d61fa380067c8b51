package authapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	simcluster "github.com/sandgate/sandgate/internal/testing/sim/cluster"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// env is one test's namespace on the shared API server, with admin clients.
type env struct {
	ns     string
	kube   kubernetes.Interface
	sb     *sandboxapi.Client
	claims *sandboxapi.SandboxClaimClient
}

func newEnv(t *testing.T) *env {
	t.Helper()
	n := testkit.NewNamespace(t)
	return &env{ns: n.Name, kube: n.Kube, sb: n.SB, claims: n.SB.SandboxClaims(n.Name)}
}

// options are the test defaults: plain HTTP cookies, no rate limit, short
// waits.
func (e *env) options() Options {
	return Options{
		Kube: e.kube, Sandboxes: e.sb, Namespace: e.ns,
		WakeTimeout: 10 * time.Second, TokenReviewCacheTTL: time.Second,
		AllowedServiceAccounts: []string{"system:serviceaccount:" + e.ns + ":nodeproxy"},
	}
}

// instance is one running auth API replica behind an httptest server.
type instance struct {
	srv    *Server
	http   *httptest.Server
	cancel context.CancelFunc
	done   chan error
	logs   *logbuf.Buffer
	once   sync.Once
}

// start runs a replica with e.options() edited by edit and waits for Ready.
func (e *env) start(t *testing.T, edit func(*Options)) *instance {
	t.Helper()
	return e.startOn(t, nil, edit)
}

// startOn is start serving on ln (nil: a new loopback listener).
func (e *env) startOn(t *testing.T, ln net.Listener, edit func(*Options)) *instance {
	t.Helper()
	o := e.options()
	logs := &logbuf.Buffer{}
	o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if edit != nil {
		edit(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{srv: srv, cancel: cancel, done: make(chan error, 1), logs: logs}
	go func() { in.done <- srv.Run(ctx) }()
	t.Cleanup(in.stop)
	testkit.Eventually(t, "auth API ready", srv.Ready)
	in.http = httptest.NewUnstartedServer(srv.Handler())
	if ln != nil {
		in.http.Listener.Close()
		in.http.Listener = ln
	}
	in.http.Start()
	return in
}

// stop shuts the replica down and waits until Run has returned.
func (in *instance) stop() {
	in.once.Do(func() {
		if in.http != nil {
			in.http.Close()
		}
		in.cancel()
		<-in.done
	})
}

// client does not follow redirects and keeps no cookies, so tests see
// exactly what the server sends.
var client = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       60 * time.Second,
}

// req is one test request.
type req struct {
	method, path string
	form         url.Values
	json         string
	header       map[string]string
	cookies      []*http.Cookie
}

// do sends rq to in and returns the response with its body read.
func (in *instance) do(t *testing.T, rq req) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	switch {
	case rq.form != nil:
		body = strings.NewReader(rq.form.Encode())
	case rq.json != "":
		body = strings.NewReader(rq.json)
	}
	r, err := http.NewRequest(rq.method, in.http.URL+rq.path, body)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case rq.form != nil:
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	case rq.json != "":
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range rq.header {
		r.Header.Set(k, v)
	}
	for _, c := range rq.cookies {
		r.AddCookie(c)
	}
	resp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// origin is the same-origin header set for in.
func (in *instance) origin() map[string]string { return map[string]string{"Origin": in.http.URL} }

// cookie returns the Set-Cookie of name in resp, or nil.
func cookie(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// signupJSON signs user up as an API client and returns the bearer token
// and the session cookie.
func (in *instance) signupJSON(t *testing.T, user string) (string, *http.Cookie) {
	t.Helper()
	resp, body := in.do(t, req{method: "POST", path: "/users", json: `{"user":"` + user + `"}`})
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusAccepted {
		t.Fatalf("signup %s: %d %s", user, resp.StatusCode, body)
	}
	var out accountResponse
	mustJSON(t, body, &out)
	ck := cookie(resp, DefaultCookieName)
	if out.Token == "" || ck == nil {
		t.Fatalf("signup %s: no token or cookie: %s", user, body)
	}
	return out.Token, ck
}

// runCluster starts a simulated agent-sandbox cluster (controller and one
// kubelet node) for the namespace, with the agent template and a warm pool
// of spares named as the auth API expects.
func (e *env) runCluster(t *testing.T, spares int32, delays controller.Delays) {
	t.Helper()
	dir := t.TempDir()
	c, err := simcluster.Start(t.Context(), simcluster.Options{
		Config: testkit.ControlPlane(t).AdminConfig(), Name: e.ns, Namespaces: []string{e.ns}, Nodes: 1,
		LogDir: filepath.Join(dir, "logs"), DataDir: filepath.Join(dir, "data"), Delays: delays,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop simulated cluster: %v", err)
		}
	})
	tmpl := &extensions.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "dsh"},
		Spec: extensions.SandboxTemplateSpec{PodTemplate: agents.PodTemplate{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "dsh", Image: "example/dsh:1",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 3080, Protocol: corev1.ProtocolTCP}},
		}}}}},
	}
	if _, err := e.sb.SandboxTemplates(e.ns).Create(t.Context(), tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pool := &extensions.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultWarmPool},
		Spec:       extensions.SandboxWarmPoolSpec{Replicas: spares, SandboxTemplateRef: extensions.TemplateRef{Name: "dsh"}},
	}
	if _, err := e.sb.SandboxWarmPools(e.ns).Create(t.Context(), pool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// warm runs a simulated cluster whose pool has two spares that adopt at
// once.
func (e *env) warm(t *testing.T) { e.runCluster(t, 2, controller.Delays{}) }

// warmStart is the usual set-up: a namespace with a warm pool and one
// replica on the test defaults.
func warmStart(t *testing.T) (*env, *instance) {
	t.Helper()
	e := newEnv(t)
	e.warm(t)
	return e, e.start(t, nil)
}

// proxyView is what a node proxy sees: the JWKS (fetched over HTTP, no
// other key material) and its own claim informer. accepts applies the
// node proxy's rule with account.FromClaim and SessionValid.
type proxyView struct {
	verifier *jwt.Verifier
	store    cache.Store
	claims   *sandboxapi.SandboxClaimClient
	ns       string
}

// proxyView builds the view of a node proxy that fetches the JWKS of
// replica in.
func (e *env) proxyView(t *testing.T, in *instance) *proxyView {
	t.Helper()
	return e.proxyViewAt(t, in, time.Now)
}

// proxyViewAt is proxyView on the clock now.
func (e *env) proxyViewAt(t *testing.T, in *instance, now func() time.Time) *proxyView {
	t.Helper()
	jwksURL := in.http.URL + "/.well-known/jwks.json"
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	f, err := jwt.NewJWKSFetcher(jwt.FetcherOptions{URL: jwksURL, MinRefreshInterval: 100 * time.Millisecond, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _ = f.Start(ctx) })
	v, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: f, Issuer: DefaultIssuer, Audience: DefaultAudience, Leeway: 5 * time.Second, CacheSize: -1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	inf := sandboxapi.NewInformer(e.claims, &extensions.SandboxClaim{}, sandboxapi.InformerOptions{
		Tweak: func(o *metav1.ListOptions) { o.LabelSelector = account.LabelManagedBy + "=" + account.ManagedByValue },
	})
	wg.Go(func() { inf.RunWithContext(ctx) })
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("proxy informer did not sync")
	}
	return &proxyView{verifier: v, store: inf.GetStore(), claims: e.claims, ns: e.ns}
}

// accepts reports whether a node proxy would accept token for user.
func (p *proxyView) accepts(token string) error {
	c, err := p.verifier.Verify(token)
	if err != nil {
		return err
	}
	obj, ok, _ := p.store.GetByKey(p.ns + "/" + account.ClaimName(DefaultClaimPrefix, c.User))
	if !ok {
		return fmt.Errorf("no claim")
	}
	a, err := account.FromClaim(obj.(*extensions.SandboxClaim))
	if err != nil {
		return err
	}
	if !a.SessionValid(c.SessionID, c.Epoch) {
		return fmt.Errorf("revoked")
	}
	return nil
}
