package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/platformtest"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// gatewayHost is the public host name the browser uses; Chromium maps it
// to the first node proxy's address (see startBrowser).
const gatewayHost = "gw.example.test"

// userDomain is USER_DOMAIN in subdomain routing: the agent of <user> is
// at <user>.userDomain, which Chromium maps to the second node proxy's
// address, so that a user origin and the main origin are served by
// different node proxies (see startBrowser).
const userDomain = "u.example.test"

// adminUser is the auth API's one admin (ADMINS).
const adminUser = "opal"

// sessionTTL is the auth API's session token lifetime in these tests, short
// so that a test outlives a token and sees it renewed.
const sessionTTL = 3 * time.Second

// Suspend and wake timings. The sweeper runs only while a flow asks for it
// (platform.sweep), so the short idle timeout (platformtest.ShortIdle)
// cannot suspend an agent in the middle of another flow. A resume takes
// well over the node proxies' wake timeout, so a navigation to a woken
// agent is answered with the waking page before the agent opens.
const (
	wakeTimeout = 2 * time.Second
	resumeDelay = 10 * time.Second
)

// platform is the full local platform, started by internal/testing/platformtest
// as for internal/requestpath/nodeproxy's end-to-end tests: the simulated
// cluster (a warm pool of two), the auth API with its idle sweeper, and one node proxy
// per simulated node running as the nodeproxy ServiceAccount with its
// read-only RBAC, reporting activity and waking suspended sandboxes; all in
// one routing mode (ROUTING_MODE).
type platform struct {
	t       *testing.T
	mode    userorigin.Mode
	port    string // the node proxies' common port
	authURL string
	ns      string
	kube    kubernetes.Interface
	sb      *sandboxapi.Client
	sweeper *sweeper.Sweeper
	nodes   []*platformNode
	logs    *logbuf.Buffer
}

// platformNode is one node's proxy: its address, the informer index it
// routes and holds requests with, and its metrics.
type platformNode struct {
	name string
	addr string // host:port on 127.0.1.<n>
	idx  *informer.Index
	reg  *prometheus.Registry
}

// startPlatform starts the platform in routing mode with the sweeper
// stopped (see sweep); everything stops when t ends. The auth API and the
// node proxies are the shipped assemblies, configured as the manifests
// configure them but for the short timings above.
func startPlatform(t *testing.T, mode userorigin.Mode) *platform {
	t.Helper()
	return platformOf(t, mode, platformtest.Start(t, platformtest.Options{
		Sim:       simtest.Options{Replicas: 2, TrustedHosts: gatewayHost, Delays: controller.Delays{Resume: resumeDelay}},
		ShortIdle: true,
		Mode:      mode, UserDomain: userDomain, PublicOrigin: gatewayOrigin, Admins: adminUser,
		SessionTTL: sessionTTL, AuthWakeTimeout: 30 * time.Second, NodeWakeTimeout: wakeTimeout,
	}))
}

// platformOf is the browser tests' view of a started platform.
func platformOf(t *testing.T, mode userorigin.Mode, env *platformtest.Platform) *platform {
	p := &platform{t: t, mode: mode, port: env.Port, authURL: env.AuthURLs[0], sweeper: env.Sweepers[0], logs: env.Logs,
		ns: env.Sim.NS, kube: env.Sim.Core, sb: env.Sim.SB}
	for _, n := range env.Nodes {
		p.nodes = append(p.nodes, &platformNode{name: n.Name, addr: n.Addr, idx: n.Index, reg: n.Registry})
	}
	return p
}

// subdomain reports whether the platform runs in subdomain routing.
func (p *platform) subdomain() bool { return p.mode == userorigin.Subdomain }

// mainOrigin is the origin of the landing page and the auth API.
func (p *platform) mainOrigin() string { return gatewayOrigin(p.port) }

// gatewayOrigin is the main origin when the node proxies listen on port.
func gatewayOrigin(port string) string { return "http://" + net.JoinHostPort(gatewayHost, port) }

// agentURL is the URL of rest (a relative path, "" for the agent's home)
// in user's agent: under /u/<user>/ on the main origin in path routing,
// on the user's own origin in subdomain routing.
func (p *platform) agentURL(user, rest string) string {
	if p.subdomain() {
		return "http://" + net.JoinHostPort(user+"."+userDomain, p.port) + "/" + rest
	}
	return p.mainOrigin() + "/u/" + user + "/" + rest
}

// sweep runs the auth API's sweeper, which then leads (it is the only
// replica) and suspends every agent idle for idleTimeout, until t ends or
// stop is called; stop may be called more than once. A platform's sweeper
// runs once: call sweep at most once.
func (p *platform) sweep(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.sweeper.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sweeper: %v", err)
		}
	})
	t.Cleanup(stop)
	return stop
}

// waitSuspended waits until user's Sandbox is suspended with its pod gone
// and every node proxy's caches see it suspended, or ctx ends.
func (p *platform) waitSuspended(ctx context.Context, user string) error {
	for {
		missing := p.suspendMissing(ctx, user)
		if missing == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s's agent to be suspended: %w (%s)", user, ctx.Err(), missing)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// suspendMissing says what is still missing for user's agent to count as
// suspended, or "" once nothing is.
func (p *platform) suspendMissing(ctx context.Context, user string) string {
	var name string
	for _, n := range p.nodes {
		e, err := n.idx.Lookup(user)
		if err != nil {
			return fmt.Sprintf("%s: %v", n.name, err)
		}
		if e.Route.State != informer.StateSuspended {
			return fmt.Sprintf("%s sees the sandbox %s", n.name, e.Route.State)
		}
		name = e.Route.Sandbox
	}
	sb, err := p.sb.Sandboxes(p.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	if c := simtest.Condition(sb.Status.Conditions, agents.ConditionSuspended); c.Status != metav1.ConditionTrue {
		return fmt.Sprintf("Sandbox %s has Suspended=%q (%s)", name, c.Status, c.Reason)
	}
	return ""
}

// authRequests counts the auth API's access-log lines so far for route
// that answered status.
func (p *platform) authRequests(route string, status int) int {
	n := 0
	for line := range bytes.Lines(p.logs.Bytes()) {
		var l struct {
			Msg, Component, Route string
			Status                int
		}
		if json.Unmarshal(line, &l) == nil && l.Msg == "request" && l.Component == "authapi" && l.Route == route && l.Status == status {
			n++
		}
	}
	return n
}

// renewals sums the node proxies' successful session renewals.
func (p *platform) renewals() float64 {
	var sum float64
	for _, n := range p.nodes {
		ok, _ := testkit.Gathered(p.t, n.reg, "sandgate_nodeproxy_renewals_total", map[string]string{"result": "ok"})
		sum += ok
	}
	return sum
}
