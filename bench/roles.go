package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/bench/bare"
	"github.com/sandgate/sandgate/bench/baseline"
	"github.com/sandgate/sandgate/bench/feed"
	"github.com/sandgate/sandgate/bench/lifecycle"
	"github.com/sandgate/sandgate/bench/load"
	"github.com/sandgate/sandgate/bench/node"
	"github.com/sandgate/sandgate/bench/origin"
	"github.com/sandgate/sandgate/bench/podlogs"
	"github.com/sandgate/sandgate/bench/scale"
	"github.com/sandgate/sandgate/bench/webapp"
)

// Users of the data path: alice's pod runs on node n1, bob's on n2.
var (
	nodes = []feed.Node{{Name: "n1", IP: "127.0.0.1"}, {Name: "n2", IP: "127.0.0.2"}}
	users = []string{"alice", "bob"}
)

// served is what a server role reports once it listens.
type served struct {
	Addr  string `json:"addr"`
	Debug string `json:"debug,omitempty"`
	// Pid, when set, is the process that serves, a child of the role's:
	// the one whose CPU the bench measures.
	Pid int `json:"pid,omitempty"`
}

// proxySpec configures the proxy role.
type proxySpec struct {
	// Node is 0 (n1) or 1 (n2); the proxy listens on that node's IP.
	Node     int    `json:"node"`
	App      string `json:"app"`
	PeerPort int    `json:"peer_port"`
	JWKS     []byte `json:"jwks"`
	// Crowd, when set, replaces alice and bob with that many users whose
	// sandboxes all run on this node, and the warm handshake cache with
	// the real Handshaker over their pods' CRI logs.
	Crowd int `json:"crowd,omitempty"`
}

// httpSpec configures the http role.
type httpSpec struct {
	Load load.Options `json:"load"`
}

// streamSpec configures the sse, wsecho and wsidle roles.
type streamSpec struct {
	URL    string `json:"url"`
	Host   string `json:"host"`
	Cookie string `json:"cookie"`
	N      int    `json:"n"`
	Size   int    `json:"size"`
}

// idleOpen is what wsidle reports once its sockets are open.
type idleOpen struct {
	Open int    `json:"open"`
	Err  string `json:"err,omitempty"`
}

// runRole runs one part of the bench in this process; spec is the
// role's configuration as JSON.
func runRole(ctx context.Context, role, spec string) error {
	switch role {
	case "app":
		return serveApp()
	case "webapp":
		return serveWebApp()
	case "baseline":
		return withSpec(spec, serveBaseline)
	case "bare":
		return withSpec(spec, serveBare)
	case "traefik":
		return withSpec(spec, func(s traefikSpec) error { return serveTraefik(ctx, s) })
	case "proxy":
		return withSpec(spec, func(s proxySpec) error { return serveProxy(ctx, s) })
	case "http":
		return withSpec(spec, func(s httpSpec) error { return emit(load.Run(ctx, s.Load)) })
	case "sse":
		return withSpec(spec, func(s streamSpec) error {
			return emitSummary(load.Events(ctx, s.URL, s.Host, s.Cookie))
		})
	case "wsecho":
		return withSpec(spec, func(s streamSpec) error {
			return emitSummary(load.Echo(ctx, s.URL, s.Host, s.Cookie, s.N, s.Size))
		})
	case "wsidle":
		return withSpec(spec, func(s streamSpec) error { return holdIdle(ctx, s) })
	case "sessions":
		return emit(runSessions())
	case "scale":
		return withSpec(spec, func(s scale.Options) error { return emitResult(scale.Run(ctx, s)) })
	case "lifecycle":
		return emitResult(lifecycle.Run(ctx))
	}
	return fmt.Errorf("unknown role %q", role)
}

// withSpec decodes spec into a T and runs role with it.
func withSpec[T any](spec string, role func(T) error) error {
	var s T
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		return fmt.Errorf("decode spec: %w", err)
	}
	return role(s)
}

// emitResult emits r unless err says the measurement failed.
func emitResult[T any](r T, err error) error {
	if err != nil {
		return err
	}
	return emit(r)
}

// emitSummary emits the latency summary of delays unless err says the
// stream failed.
func emitSummary(delays []time.Duration, err error) error {
	return emitResult(load.Summarise(delays), err)
}

// holdIdle opens s.N idle WebSockets, reports how many opened, and keeps
// them open until the orchestrator closes stdin.
func holdIdle(ctx context.Context, s streamSpec) error {
	conns, err := load.Idle(ctx, s.URL, s.Host, s.Cookie, s.N, 16)
	r := idleOpen{Open: len(conns)}
	if err != nil {
		r.Err = err.Error()
	}
	if err := emit(r); err != nil {
		return err
	}
	waitParent()
	for _, c := range conns {
		c.Close()
	}
	return nil
}

// serveApp runs the origin on a loopback port until the orchestrator
// closes stdin.
func serveApp() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := origin.New()
	go srv.Serve(ln)
	if err := emit(served{Addr: ln.Addr().String()}); err != nil {
		return err
	}
	waitParent()
	return srv.Shutdown()
}

// serveWebApp runs the realistic app on a loopback port until the
// orchestrator closes stdin.
func serveWebApp() error {
	srv := &http.Server{Handler: webapp.New(), ReadHeaderTimeout: 10 * time.Second}
	return serveHTTP(srv)
}

// serveBaseline runs the httputil.ReverseProxy baseline in front of app
// until the orchestrator closes stdin.
func serveBaseline(app string) error {
	srv := &http.Server{Handler: baseline.New(&url.URL{Scheme: "http", Host: app}), ReadHeaderTimeout: 10 * time.Second}
	return serveHTTP(srv)
}

// serveHTTP runs srv on a loopback port until the orchestrator closes
// stdin.
func serveHTTP(srv *http.Server) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	go srv.Serve(ln)
	if err := emit(served{Addr: ln.Addr().String()}); err != nil {
		return err
	}
	waitParent()
	return srv.Close()
}

// serveBare runs the bare fasthttp proxy in front of app until the
// orchestrator closes stdin.
func serveBare(app string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := bare.New(app, nil)
	go srv.Serve(ln)
	dbg, err := serveDebug()
	if err != nil {
		return err
	}
	if err := emit(served{Addr: ln.Addr().String(), Debug: dbg}); err != nil {
		return err
	}
	waitParent()
	return srv.Shutdown()
}

// serveProxy runs a node proxy for node s.Node over fed caches with every
// local pod at s.App: alice's and bob's, or s.Crowd users' all on this
// node with the real Handshaker.
func serveProxy(ctx context.Context, s proxySpec) error {
	host, port, err := net.SplitHostPort(s.App)
	if err != nil {
		return fmt.Errorf("app address: %w", err)
	}
	p, _ := strconv.Atoi(port)
	me := nodes[s.Node]
	fo := feed.Options{
		Namespace: node.Namespace, Users: len(users), User: func(i int) string { return users[i] },
		Nodes: nodes, Place: func(i int) int { return i }, Local: me.Name, PodIP: host, PodPort: int32(p),
	}
	if s.Crowd > 0 {
		fo.Users, fo.User, fo.Place = s.Crowd, crowdUser, func(int) int { return s.Node }
	}
	lists := feed.Build(fo)
	root, err := podLogs(ctx, lists)
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	px, err := node.Start(ctx, node.Options{Name: me.Name, IP: me.IP, Sources: lists, JWKS: s.JWKS, PeerPort: s.PeerPort, LogRoot: root, Log: &proxyLog})
	if err != nil {
		return err
	}
	dbg, err := serveDebug()
	if err != nil {
		return err
	}
	if err := emit(served{Addr: px.Addr(), Debug: dbg}); err != nil {
		return err
	}
	waitParent()
	stop()
	return px.Wait()
}

// Each pod's log holds logLinesBefore request-log lines, the launch line,
// then logLinesAfter more.
const logLinesBefore, logLinesAfter = 200, 800

// crowdUser names user i of the many-users run.
func crowdUser(i int) string { return fmt.Sprintf("crowd%03d", i) }

// podLogs writes the CRI log of every pod lists feeds into a fresh log
// root, as the kubelet would hold them, for the real handshaker to read,
// and returns the root.
func podLogs(ctx context.Context, lists *feed.Lists) (string, error) {
	pods, err := lists.Pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list fed pods: %w", err)
	}
	root, err := os.MkdirTemp("", "sandgate-bench-pods-")
	if err != nil {
		return "", fmt.Errorf("make log root: %w", err)
	}
	for _, p := range pods.Items {
		c := p.Spec.Containers[0]
		addr := net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(c.Ports[0].ContainerPort)))
		pod := podlogs.Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Container: c.Name, Addr: addr}
		if err := podlogs.Write(root, pod, logLinesBefore, logLinesAfter); err != nil {
			os.RemoveAll(root)
			return "", err
		}
	}
	return root, nil
}
