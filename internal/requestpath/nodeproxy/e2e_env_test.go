package nodeproxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/accountpath/authapid"
	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxyd"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// platform is the whole data path on a real API server: the simulated
// cluster of simtest (controller, kubelet, agent apps on 127.x pod
// addresses, a warm pool of two), the auth API, and one node proxy per
// simulated node, each running as the nodeproxy ServiceAccount with only
// its read-only RBAC; the auth API and the node proxies are the shipped
// assemblies (internal/accountpath/authapid, internal/requestpath/nodeproxyd).
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
	// the first), their sweepers, and the wake patches on Sandboxes the
	// auth API replicas made.
	authURLs    []string
	sweepers    []*sweeper.Sweeper
	wakePatches atomic.Int64

	subdomain bool
	// authClock is every auth API replica's clock: the wall clock until a
	// test moves it.
	authClock *testkit.Clock
}

// platformOptions shape a platform; the zero value is TestE2EPlatform's.
type platformOptions struct {
	// Idle runs two auth API replicas, each with a leader-elected sweeper
	// (short idle timeout, report interval and lease), and has node i
	// report activity to and wake through replica i, with a short report
	// interval and wake timeout.
	Idle bool
	// CountOpenConnections sets the sweepers' IDLE_COUNTS_OPEN_CONNECTIONS.
	CountOpenConnections bool
	// Subdomain runs the auth API and the node proxies in subdomain
	// routing: user origins <user>.e2eUserDomain, main origin testHost.
	Subdomain bool
}

// Helpers shared with the package's internal tests (export_test.go).
var (
	accessLines  = nodeproxy.AccessLines
	closeCode    = nodeproxy.CloseCode
	cookie       = nodeproxy.Cookie
	echo         = nodeproxy.Echo
	echoes       = nodeproxy.Echoes
	findCookie   = nodeproxy.FindCookie
	handshakesOf = nodeproxy.HandshakesOf
	rawStatus    = nodeproxy.RawStatus
	readAll      = nodeproxy.ReadAll
)

const (
	closeUnauthenticated = nodeproxy.CloseUnauthenticated
	entryStateName       = nodeproxy.EntryStateName
	testHost             = nodeproxy.TestHost
	upstreamPod          = nodeproxy.UpstreamPod
)

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

// platformNode is one node's proxy, the shipped assembly, and the informer
// index it routes with.
type platformNode struct {
	name string
	addr string
	ops  string // its ops listener
	idx  *informer.Index
	reg  *prometheus.Registry
	d    *nodeproxyd.Daemon
}

// hopsIn is how many hops from another node's proxy n has received with
// result.
func (n *platformNode) hopsIn(t *testing.T, result string) float64 {
	t.Helper()
	hops, _ := testkit.Gathered(t, n.reg, "sandgate_nodeproxy_hops_total", map[string]string{"direction": "in", "result": result})
	return hops
}

// isWakePatch reports whether r is a wake patch: a PATCH that sets a
// Sandbox's operating mode to Running (the sweepers' suspend patches are
// not). It leaves r's body readable.
func isWakePatch(r *http.Request) bool {
	if r.Method != http.MethodPatch || !strings.Contains(r.URL.Path, "/sandboxes/") || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	return err == nil && strings.Contains(string(body), `"operatingMode":"`+string(agents.OperatingModeRunning)+`"`)
}

func startPlatform(t *testing.T) *platform {
	t.Helper()
	return startPlatformWith(t, platformOptions{})
}

func startPlatformWith(t *testing.T, o platformOptions) *platform {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	cp := testkit.ControlPlane(t)
	ctx := context.Background()
	sim := simtest.Start(t, cp, simtest.Options{Replicas: 2, TrustedHosts: testHost})
	p := &platform{t: t, cp: cp, ns: sim.NS, sim: sim, kube: sim.Core, sb: sim.SB, logs: &logbuf.Buffer{}, subdomain: o.Subdomain,
		authClock: testkit.NewOffsetClock()}
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
	// a token for the auth API's internal audience, and the hop key.
	clustertest.GrantNodeProxy(t, p.kube, p.ns)
	cfg, err := cp.ServiceAccountConfig(ctx, p.ns, "nodeproxy")
	if err != nil {
		t.Fatal(err)
	}
	testkit.ObserveRequests(cfg, func(*http.Request) { p.requests.Add(1) })
	saToken, err := cp.ServiceAccountToken(ctx, p.ns, "nodeproxy", 3600, authapi.DefaultInternalAudience)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokenFile, hopKeyFile := filepath.Join(dir, "token"), filepath.Join(dir, "hop.key")
	for file, data := range map[string][]byte{tokenFile: []byte(saToken), hopKeyFile: nodeproxy.TestHopKey} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kube, sb := testkit.Clients(t, cfg)
	port := 0
	for i := 1; i <= 2; i++ {
		n := &platformNode{name: fmt.Sprintf("%s-%d", p.ns, i), reg: prometheus.NewRegistry()}
		ln, err := net.Listen("tcp", net.JoinHostPort(fmt.Sprintf("127.0.1.%d", i), fmt.Sprint(port)))
		if err != nil {
			t.Fatalf("listen on node %d: %v", i, err)
		}
		n.addr = ln.Addr().String()
		port = ln.Addr().(*net.TCPAddr).Port
		c := nodeproxyd.Defaults()
		c.NodeName, c.Namespace, c.ListenAddr, c.OpsAddr = n.name, p.ns, n.addr, "127.0.0.1:0"
		c.AuthAPIURL, c.SATokenFile, c.HopKeyFile = p.authURL, tokenFile, hopKeyFile
		c.LogRoot = sim.Cluster.Kubelet.LogRoot(n.name)
		c.CookieSecure, c.AllowInsecure, c.ShutdownTimeout = false, true, 2*time.Second
		if o.Subdomain {
			c.RoutingMode, c.UserDomain, c.PublicOrigin = string(userorigin.Subdomain), e2eUserDomain, "http://"+testHost
		}
		if o.Idle {
			// Node i reports to and wakes through replica i.
			c.AuthAPIURL = p.authURLs[(i-1)%len(p.authURLs)]
			c.WakeTimeout, c.ReportInterval = e2eWakeTimeout, e2eReportInterval
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if n.d, err = nodeproxyd.Assemble(c, nodeproxyd.Deps{
			Logger: logger.With("process", n.name), Registry: n.reg, Listener: ln,
			Sources: nodeproxyd.Clients{Kube: kube, Sandboxes: sb},
		}); err != nil {
			t.Fatal(err)
		}
		n.idx, n.ops = n.d.Index(), n.d.OpsAddr()
		testkit.Run(t, n.name+"'s node proxy", n.d.Run)
		p.nodes = append(p.nodes, n)
	}
	for _, n := range p.nodes {
		testkit.Eventually(t, n.name+" ready", func() bool { return testkit.Status("http://"+n.ops+"/readyz") == http.StatusOK })
	}
	return p
}

// startAuth starts auth API replica r, the shipped assembly, on its own
// listener. With o.Idle its sweeper runs (identity: its pod name and that
// listener) and its wake patches are counted in p.wakePatches; otherwise
// its sweeper is held apart and never runs.
func (p *platform) startAuth(r int, o platformOptions, logger *slog.Logger) {
	t := p.t
	name := fmt.Sprintf("authapi-%d", r)
	c := authapid.Defaults()
	c.ListenAddr, c.OpsAddr, c.PodName = "127.0.0.1:0", "localhost:0", name
	c.Namespace, c.WarmPool, c.TrustedProxies = p.ns, "dsh-pool", "127.0.0.0/8"
	c.AllowedServiceAccounts = "system:serviceaccount:" + p.ns + ":nodeproxy"
	c.CookieSecure, c.AllowInsecure, c.RateLimit = false, true, 0
	c.WakeTimeout, c.TokenReviewCacheTTL = 20*time.Second, time.Second
	if o.Subdomain {
		c.RoutingMode, c.UserDomain, c.EntryCodeTTL = string(userorigin.Subdomain), e2eUserDomain, e2eEntryCodeTTL
	}
	deps := authapid.Deps{Logger: logger.With("process", "authapi"), Kube: p.kube, Sandboxes: p.sb, SweepApart: !o.Idle, Now: p.authClock.Now}
	if o.Idle {
		deps.Logger = logger.With("process", name)
		c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = e2eLease, 2*time.Second, 500*time.Millisecond
		c.IdleTimeout, c.ReportInterval, c.IdleCountsOpenConnections = e2eIdleTimeout, e2eReportInterval, o.CountOpenConnections
		cfg := p.cp.AdminConfig()
		testkit.ObserveRequests(cfg, func(r *http.Request) {
			if isWakePatch(r) {
				p.wakePatches.Add(1)
			}
		})
		var err error
		if deps.Sandboxes, err = sandboxapi.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
	}
	auth, err := authapid.Assemble(c, deps)
	if err != nil {
		t.Fatal(err)
	}
	if o.Idle {
		p.sweepers = append(p.sweepers, auth.Sweeper())
	}
	testkit.Run(t, name, auth.Run)
	p.authURLs = append(p.authURLs, "http://"+auth.Addr())
	testkit.Eventually(t, name+" ready", auth.Ready)
}

// account is a signed-up user: bearer token and session cookie value.
type e2eAccount struct {
	user, bearer, session string
	// origin is the origin session on the user's origin (subdomain
	// routing).
	origin string
}

// signup signs user up through node i's proxy, as a JSON API client, and
// waits until the proxy serves the user's app to the session cookie.
func (p *platform) signup(i int, user string) e2eAccount {
	p.t.Helper()
	a := p.createAccount(i, user)
	if p.subdomain {
		a.origin = p.enter(i, user, a.session, "/")
		p.waitServed(i, userHost(user), "/api/echo", map[string]string{"Cookie": originCookie(a.origin)})
		return a
	}
	p.waitServed(i, testHost, "/u/"+user+"/api/echo", map[string]string{"Cookie": cookie(a.session)})
	return a
}

// createAccount signs user up through node i's proxy, as a JSON API
// client, and returns the bearer token and session cookie.
func (p *platform) createAccount(i int, user string) e2eAccount {
	t := p.t
	t.Helper()
	resp := p.sendBody(i, http.MethodPost, "/users", `{"user":"`+user+`"}`)
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
		if c.Name == nodeproxy.DefaultCookieName {
			a.session = c.Value
		}
	}
	if a.bearer == "" || a.session == "" {
		t.Fatalf("signup %s: no token or session cookie", user)
	}
	return a
}

// waitServed waits until node i's proxy serves path on host to a request
// with hdr.
func (p *platform) waitServed(i int, host, path string, hdr map[string]string) {
	p.t.Helper()
	testkit.Eventually(p.t, host+path+" served", func() bool {
		resp := p.getAt(i, host, path, hdr)
		readAll(p.t, resp)
		return resp.StatusCode == http.StatusOK
	})
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
	return testkit.Request{Method: method, URL: "http://" + p.nodes[i].addr + path, Host: host, Header: hdr}.Send(p.t, e2eClient)
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
