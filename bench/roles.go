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

// runRole runs one part of the bench in this process.
func runRole(ctx context.Context, role, spec string) error {
	decode := func(v any) error {
		if err := json.Unmarshal([]byte(spec), v); err != nil {
			return fmt.Errorf("decode spec: %w", err)
		}
		return nil
	}
	switch role {
	case "app":
		return serveApp()
	case "webapp":
		return serveWebApp()
	case "baseline":
		var app string
		if err := decode(&app); err != nil {
			return err
		}
		return serveBaseline(app)
	case "bare":
		var app string
		if err := decode(&app); err != nil {
			return err
		}
		return serveBare(app)
	case "proxy":
		var s proxySpec
		if err := decode(&s); err != nil {
			return err
		}
		return serveProxy(ctx, s)
	case "http":
		var s httpSpec
		if err := decode(&s); err != nil {
			return err
		}
		return emit(load.Run(ctx, s.Load))
	case "sse":
		var s streamSpec
		if err := decode(&s); err != nil {
			return err
		}
		d, err := load.Events(ctx, s.URL, s.Host, s.Cookie)
		if err != nil {
			return err
		}
		return emit(load.Summarise(d))
	case "wsecho":
		var s streamSpec
		if err := decode(&s); err != nil {
			return err
		}
		d, err := load.Echo(ctx, s.URL, s.Host, s.Cookie, s.N, s.Size)
		if err != nil {
			return err
		}
		return emit(load.Summarise(d))
	case "wsidle":
		var s streamSpec
		if err := decode(&s); err != nil {
			return err
		}
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
	case "sessions":
		return emit(runSessions())
	case "scale":
		var s scale.Options
		if err := decode(&s); err != nil {
			return err
		}
		r, err := scale.Run(ctx, s)
		if err != nil {
			return err
		}
		return emit(r)
	case "lifecycle":
		r, err := lifecycle.Run(ctx)
		if err != nil {
			return err
		}
		return emit(r)
	}
	return fmt.Errorf("unknown role %q", role)
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
	if err := emit(served{Addr: ln.Addr().String()}); err != nil {
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
