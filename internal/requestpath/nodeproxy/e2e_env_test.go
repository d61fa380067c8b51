package nodeproxy_test

import (
	"bytes"
	"encoding/json"
	"io"
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

	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxyd"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/platformtest"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// platform is the whole data path on a real API server: the simulated
// cluster of simtest (controller, kubelet, agent apps on 127.x pod
// addresses, a warm pool of two), the auth API, and one node proxy per
// simulated node, each running as the nodeproxy ServiceAccount with only
// its read-only RBAC; internal/testing/platformtest starts it, the auth API
// and the node proxies as the shipped assemblies.
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

	// Every auth API replica's URL (authURL is the first) and sweeper, and
	// with platformOptions.Idle the wake patches on Sandboxes the auth API
	// replicas made.
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
	// Release is the agent-sandbox release the controller stand-in
	// behaves as; empty is the recommended one.
	Release controller.Release
	// Egress serves each node's egress listener in front of a provider
	// stand-in (e2e_atwork_test.go), with BusyAllowance the auth API's
	// BUSY_ALLOWANCE.
	Egress        bool
	BusyAllowance time.Duration
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

// e2eWakeTimeout is the node proxies' wake timeout on the Idle platform.
const e2eWakeTimeout = 10 * time.Second

// platformNode is one node's proxy, the shipped assembly, and the informer
// index it routes with.
type platformNode struct {
	name   string
	addr   string
	egress string // the egress listener, with platformOptions.Egress
	idx    *informer.Index
	reg    *prometheus.Registry
	d      *nodeproxyd.Daemon
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
	p := &platform{t: t, subdomain: o.Subdomain, authClock: testkit.NewOffsetClock()}
	env := platformtest.Start(t, p.options(o))
	p.cp, p.sim, p.logs = env.CP, env.Sim, env.Logs
	p.ns, p.kube, p.sb = env.Sim.NS, env.Sim.Core, env.Sim.SB
	p.authURLs, p.authURL, p.sweepers = env.AuthURLs, env.AuthURLs[0], env.Sweepers
	for _, n := range env.Nodes {
		p.nodes = append(p.nodes, &platformNode{name: n.Name, addr: n.Addr, egress: n.Egress, idx: n.Index, reg: n.Registry, d: n.Daemon})
	}
	return p
}

// options shapes the platform o asks for. The node proxies run with the
// hop key, their API requests counted in p.requests. With o.Idle, node i
// reports to and wakes through auth API replica i, whose sweeper runs and
// whose wake patches are counted in p.wakePatches; otherwise the one
// replica's sweeper is held apart and never runs.
func (p *platform) options(o platformOptions) platformtest.Options {
	po := platformtest.Options{
		Sim:                simtest.Options{Replicas: 2, TrustedHosts: testHost, Release: o.Release},
		AuthWakeTimeout:    20 * time.Second,
		AuthClock:          p.authClock.Now,
		HopKey:             nodeproxy.TestHopKey,
		ObserveNodeRequest: func(*http.Request) { p.requests.Add(1) },
	}
	if o.Idle {
		po.AuthReplicas, po.Sweep, po.ShortIdle, po.IdleCountsOpenConnections = 2, true, true, o.CountOpenConnections
		po.NodeWakeTimeout = e2eWakeTimeout
		po.ObserveAuthRequest = func(r *http.Request) {
			if isWakePatch(r) {
				p.wakePatches.Add(1)
			}
		}
	}
	if o.Egress {
		po.EgressProviders, po.EgressKeysDir = startProviderStandin(p.t)
		po.BusyAllowance = o.BusyAllowance
	}
	if o.Subdomain {
		po.Mode, po.UserDomain, po.EntryCodeTTL = userorigin.Subdomain, e2eUserDomain, e2eEntryCodeTTL
		po.PublicOrigin = func(string) string { return "http://" + testHost }
	}
	return po
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
