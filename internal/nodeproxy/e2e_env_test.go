package nodeproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/authapi"
	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/controlplane"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/logbuf"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sim/simtest"
	"github.com/sandgate/sandgate/internal/sweeper"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// platform is the whole data path on a real API server: the simulated
// cluster of simtest (controller, kubelet, agent apps on 127.x pod
// addresses, a warm pool of two), the auth API, and one node proxy per
// simulated node, each running as the nodeproxy ServiceAccount with only
// its read-only RBAC.
type platform struct {
	t        *testing.T
	cp       *controlplane.ControlPlane
	ns       string
	sim      *simtest.Env
	kube     kubernetes.Interface
	sb       *sandboxapi.Client
	authURL  string
	nodes    []*platformNode
	requests atomic.Int64 // API requests made by the node proxies
	logs     *logbuf.Buffer

	// With platformOptions.Idle: every auth API replica's URL (authURL is
	// the first), their sweepers, and the PATCH requests on Sandboxes the
	// auth API replicas made (wake patches; the sweepers' are not counted).
	authURLs    []string
	sweepers    []*sweeper.Sweeper
	wakePatches atomic.Int64

	subdomain bool
}

// platformOptions shape a platform; the zero value is TestE2EPlatform's.
type platformOptions struct {
	// Idle runs two auth API replicas, each with a leader-elected sweeper
	// (short idle timeout, report interval and lease), and gives each node
	// proxy an activity tracker and reporter (node i reports to replica i)
	// and wake-on-connect on its informer index.
	Idle bool
	// CountOpenConnections sets the sweepers' IDLE_COUNTS_OPEN_CONNECTIONS.
	CountOpenConnections bool
	// Subdomain runs the auth API and the node proxies in subdomain
	// routing: user origins <user>.e2eUserDomain, main origin testHost.
	Subdomain bool
}

// Subdomain routing in the e2e platform: the user origins' parent domain
// and the entry codes' lifetime.
const (
	e2eUserDomain   = "u.example.test"
	e2eEntryCodeTTL = time.Second
)

// Idle timings of the Idle platform.
const (
	e2eIdleTimeout    = 3 * time.Second
	e2eReportInterval = time.Second
	e2eLease          = 3 * time.Second
	e2eWakeTimeout    = 10 * time.Second
)

// platformNode is one node's proxy and what it is built from.
type platformNode struct {
	name string
	addr string
	idx  *informer.Index
	hs   *handshake.Handshaker
	px   *Proxy
	reg  *prometheus.Registry
	// tracker is the node's activity table (Idle platform only).
	tracker *activity.Tracker
}

// countingTransport counts requests sent to the API server.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// patchCounter counts PATCH requests on Sandboxes.
type patchCounter struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c patchCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/sandboxes/") {
		c.n.Add(1)
	}
	return c.rt.RoundTrip(r)
}

func startPlatform(t *testing.T) *platform {
	t.Helper()
	return startPlatformWith(t, platformOptions{})
}

func startPlatformWith(t *testing.T, o platformOptions) *platform {
	t.Helper()
	cp := controlPlane(t)
	ctx := context.Background()
	sim := simtest.Start(t, cp, simtest.Options{Replicas: 2, TrustedHosts: testHost})
	p := &platform{t: t, cp: cp, ns: sim.NS, sim: sim, kube: sim.Core, sb: sim.SB, logs: &logbuf.Buffer{}, subdomain: o.Subdomain}
	logger := slog.New(slog.NewJSONHandler(p.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))

	// The auth API, as the admin (its own RBAC is tested in its package):
	// one replica, or two with sweepers.
	replicas := 1
	if o.Idle {
		replicas = 2
	}
	for r := range replicas {
		p.startAuth(r, o, logger)
	}
	p.authURL = p.authURLs[0]

	// The node proxies' identity: read-only RBAC, a counted API client,
	// and a token for the auth API's internal audience.
	clustertest.GrantNodeProxy(t, p.kube, p.ns)
	cfg, err := cp.ServiceAccountConfig(ctx, p.ns, "nodeproxy")
	if err != nil {
		t.Fatal(err)
	}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &p.requests} }
	saToken, err := cp.ServiceAccountToken(ctx, p.ns, "nodeproxy", 3600, authapi.DefaultInternalAudience)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(saToken), 0o600); err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandboxapi.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fetcher, err := jwt.NewJWKSFetcher(jwt.FetcherOptions{URL: p.authURL + "/.well-known/jwks.json"})
	if err != nil {
		t.Fatal(err)
	}
	ver, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: fetcher, Issuer: authapi.DefaultIssuer, Audience: authapi.DefaultAudience, Leeway: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var done []chan error
	t.Cleanup(func() {
		stop()
		for _, d := range done {
			if err := <-d; err != nil {
				t.Errorf("node proxy: %v", err)
			}
		}
		for _, n := range p.nodes {
			n.hs.Close()
		}
	})
	run := func(f func() error) {
		d := make(chan error, 1)
		done = append(done, d)
		go func() { d <- f() }()
	}
	run(func() error { return fetcher.Start(runCtx) })

	port := 0
	for i := 1; i <= 2; i++ {
		n := &platformNode{name: fmt.Sprintf("%s-%d", p.ns, i), reg: prometheus.NewRegistry()}
		ip := fmt.Sprintf("127.0.1.%d", i)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
		if err != nil {
			t.Fatalf("listen on node %d: %v", i, err)
		}
		n.addr = ln.Addr().String()
		if port == 0 {
			_, ps, _ := net.SplitHostPort(n.addr)
			port = atoi(t, ps)
		}
		if n.hs, err = handshake.New(handshake.Options{LogRoot: sim.Cluster.Kubelet.LogRoot(n.name), Registerer: n.reg}); err != nil {
			t.Fatal(err)
		}
		if n.idx, err = informer.New(informer.Options{
			Namespace: p.ns, NodeName: n.name,
			Claims: sb.SandboxClaims(p.ns), Sandboxes: sb.Sandboxes(p.ns),
			Pods: kube.CoreV1().Pods(p.ns), Nodes: kube.CoreV1().Nodes(),
			OnPodGone: n.hs.ForgetPod, OnUserGone: n.hs.ForgetUser,
		}); err != nil {
			t.Fatal(err)
		}
		opts := Options{
			NodeName: n.name, Directory: n.idx, Verifier: ver, Handshaker: n.hs, Peers: n.idx, HopKey: testHopKey,
			ReadyChecks: []ReadyCheck{{"informers", n.idx.HasSynced}, {"jwks", fetcher.Ready}},
			AuthAPI:     p.authURL, ServiceAccountToken: func() (string, error) { return saToken, nil },
			PeerPort: port, Logger: logger.With("process", n.name), Registerer: n.reg, Gatherer: n.reg,
			DrainTimeout: 2 * time.Second,
		}
		if o.Subdomain {
			if opts.OriginVerifier, err = jwt.NewVerifier(jwt.VerifierOptions{
				Keys: fetcher, Issuer: authapi.DefaultIssuer, Audience: jwt.OriginAudience(authapi.DefaultAudience), Leeway: 5 * time.Second,
			}); err != nil {
				t.Fatal(err)
			}
			if opts.EntryVerifier, err = jwt.NewVerifier(jwt.VerifierOptions{
				Keys: fetcher, Issuer: authapi.DefaultIssuer, Audience: jwt.EntryAudience(authapi.DefaultAudience), Leeway: 2 * time.Second,
			}); err != nil {
				t.Fatal(err)
			}
			opts.RoutingMode, opts.UserDomain, opts.PublicOrigin = userorigin.Subdomain, e2eUserDomain, "http://"+testHost
		}
		if o.Idle {
			authURL := p.authURLs[(i-1)%len(p.authURLs)]
			n.tracker = activity.New(activity.Options{Quiet: e2eReportInterval})
			rep, err := activity.NewReporter(activity.ReporterOptions{
				Tracker: n.tracker, Node: n.name, URL: authURL + "/internal/v1/activity",
				TokenFile: tokenFile, Interval: e2eReportInterval,
				Logger: logger.With("process", n.name), Registerer: n.reg,
			})
			if err != nil {
				t.Fatal(err)
			}
			run(func() error { return rep.Run(runCtx) })
			opts.AuthAPI = authURL
			opts.Waiter, opts.WakeTimeout = n.idx, e2eWakeTimeout
			opts.Activity, opts.Namespace = n.tracker, p.ns
		}
		if n.px, err = New(opts); err != nil {
			t.Fatal(err)
		}
		run(func() error { return n.idx.Run(runCtx) })
		run(func() error { return n.px.Serve(runCtx, ln) })
		p.nodes = append(p.nodes, n)
	}
	for _, n := range p.nodes {
		waitFor(t, 30*time.Second, n.name+" ready", func() bool { return len(n.px.notReady()) == 0 })
	}
	return p
}

// startAuth starts auth API replica r on its own listener. With o.Idle it
// gets a sweeper (identity: its pod name and that listener) as Activity and
// a Sandbox client whose PATCH requests are counted in p.wakePatches.
func (p *platform) startAuth(r int, o platformOptions, logger *slog.Logger) {
	t := p.t
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("authapi-%d", r)
	opts := authapi.Options{
		Kube: p.kube, Sandboxes: p.sb, Namespace: p.ns, WarmPool: "dsh-pool",
		WakeTimeout: 20 * time.Second, TokenReviewCacheTTL: time.Second,
		AllowedServiceAccounts: []string{"system:serviceaccount:" + p.ns + ":nodeproxy"},
		TrustedProxies:         mustPrefixes("127.0.0.0/8"),
		Logger:                 logger.With("process", "authapi"),
	}
	if o.Subdomain {
		opts.RoutingMode, opts.UserDomain, opts.EntryCodeTTL = userorigin.Subdomain, e2eUserDomain, e2eEntryCodeTTL
	}
	ctx, stop := context.WithCancel(context.Background())
	var sw *sweeper.Sweeper
	if o.Idle {
		opts.Logger = logger.With("process", name)
		cfg := p.cp.AdminConfig()
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return patchCounter{rt, &p.wakePatches} }
		if opts.Sandboxes, err = sandboxapi.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
		sw, err = sweeper.New(sweeper.Options{
			Namespace: p.ns, Sandboxes: p.sb.Sandboxes(p.ns), Claims: p.sb.SandboxClaims(p.ns),
			Leases: p.kube.CoordinationV1(), Identity: sweeper.Identity(name, ln.Addr().String()),
			Pods: p.kube.CoreV1().Pods(p.ns), Events: p.kube.CoreV1().Events(p.ns),
			LeaseDuration: e2eLease, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
			IdleTimeout: e2eIdleTimeout, ReportInterval: e2eReportInterval, CountOpenConnections: o.CountOpenConnections,
			Logger: opts.Logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		opts.Activity = sw
		p.sweepers = append(p.sweepers, sw)
	}
	auth, err := authapi.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	authDone := make(chan error, 1)
	go func() { authDone <- auth.Run(ctx) }()
	swDone := make(chan error, 1)
	if sw != nil {
		go func() { swDone <- sw.Run(ctx) }()
	} else {
		swDone <- nil
	}
	srv := &http.Server{Handler: auth.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		stop()
		<-authDone
		if err := <-swDone; err != nil {
			t.Errorf("%s sweeper: %v", name, err)
		}
	})
	p.authURLs = append(p.authURLs, "http://"+ln.Addr().String())
	waitFor(t, 30*time.Second, name+" ready", auth.Ready)
}

func mustPrefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(s))
	for _, v := range s {
		out = append(out, netip.MustParsePrefix(v))
	}
	return out
}

// account is a signed-up user: bearer token and session cookie value.
type e2eAccount struct {
	user, bearer, session string
	// origin is the origin session on the user's origin (subdomain
	// routing).
	origin string
}

// signup signs user up through node i's proxy, as a JSON API client, and
// waits until the proxy serves the user's app.
func (p *platform) signup(i int, user string) e2eAccount {
	t := p.t
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+p.nodes[i].addr+"/users", strings.NewReader(`{"user":"`+user+`"}`))
	req.Host = testHost
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusAccepted {
		t.Fatalf("signup %s: %d %s", user, resp.StatusCode, body)
	}
	var out struct{ Token string }
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	a := e2eAccount{user: user, bearer: out.Token}
	for _, c := range resp.Cookies() {
		if c.Name == DefaultCookieName {
			a.session = c.Value
		}
	}
	if a.bearer == "" || a.session == "" {
		t.Fatalf("signup %s: no token or session cookie", user)
	}
	if p.subdomain {
		a.origin = p.enter(i, user, a.session, "/")
		waitFor(t, 30*time.Second, user+"'s app served on its origin", func() bool {
			resp := p.getAt(i, userHost(user), "/api/echo", map[string]string{"Cookie": originCookie(a.origin)})
			readAll(t, resp)
			return resp.StatusCode == http.StatusOK
		})
		return a
	}
	waitFor(t, 30*time.Second, user+"'s app served", func() bool {
		resp := p.get(i, "/u/"+user+"/api/echo", map[string]string{"Cookie": cookie(a.session)})
		readAll(t, resp)
		return resp.StatusCode == http.StatusOK
	})
	return a
}

// get sends a browser-like GET to node i's proxy.
func (p *platform) get(i int, path string, hdr map[string]string) *http.Response {
	p.t.Helper()
	return p.getAt(i, testHost, path, hdr)
}

// getAt is get with another Host.
func (p *platform) getAt(i int, host, path string, hdr map[string]string) *http.Response {
	p.t.Helper()
	return p.send(i, http.MethodGet, host, path, hdr)
}

// send is a request with any method to node i's proxy for host.
func (p *platform) send(i int, method, host, path string, hdr map[string]string) *http.Response {
	p.t.Helper()
	req, err := http.NewRequest(method, "http://"+p.nodes[i].addr+path, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e2eClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	return resp
}

var e2eClient = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// podNode returns the index of the node running user's pod.
func (p *platform) podNode(user string) int {
	p.t.Helper()
	e, err := p.nodes[0].idx.Lookup(user)
	if err != nil {
		p.t.Fatal(err)
	}
	for i, n := range p.nodes {
		if n.name == e.Route.Node {
			return i
		}
	}
	p.t.Fatalf("%s's pod is on unknown node %q", user, e.Route.Node)
	return -1
}

var appRequest = regexp.MustCompile(`dsh web: [A-Z]+ (/\S*) \d+ \d+ms`)

// appLog returns the CRI log files of user's pod, read on its node.
func (p *platform) appLog(user string) string {
	p.t.Helper()
	n := p.nodes[p.podNode(user)]
	e, err := n.idx.Lookup(user)
	if err != nil || !e.Route.Local {
		p.t.Fatalf("%s's pod is not local to %s: %v", user, n.name, err)
	}
	dir := filepath.Join(p.sim.Cluster.Kubelet.LogRoot(n.name), p.ns+"_"+e.Route.Pod.Name+"_"+e.Route.Pod.UID, "dsh")
	files, _ := filepath.Glob(filepath.Join(dir, "*.log*"))
	var all strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			p.t.Fatal(err)
		}
		all.Write(data)
	}
	return all.String()
}

// appRequests lists the paths user's app has answered, read from the CRI
// log files of its pod on its node, probes and token exchanges excluded.
func (p *platform) appRequests(user string) []string {
	p.t.Helper()
	var out []string
	for _, m := range appRequest.FindAllStringSubmatch(p.appLog(user), -1) {
		if m[1] != "/favicon.svg" && m[1] != "/" {
			out = append(out, m[1])
		}
	}
	return out
}

var launchLine = regexp.MustCompile(`\?token=([A-Za-z0-9_-]{43})`)

// launchTokens lists the launch tokens user's app has printed.
func (p *platform) launchTokens(user string) []string {
	p.t.Helper()
	var out []string
	for _, m := range launchLine.FindAllStringSubmatch(p.appLog(user), -1) {
		out = append(out, m[1])
	}
	return out
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
