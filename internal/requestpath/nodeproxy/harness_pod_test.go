package nodeproxy

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/sim/agentapp"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// criLog turns an app's stdout into CRI log records in its container's log
// file, as the kubelet would, and keeps the lines for the test.
type criLog struct {
	mu    sync.Mutex
	path  string
	lines []string
}

func (c *criLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := os.OpenFile(c.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	for line := range strings.SplitSeq(strings.TrimSuffix(string(p), "\n"), "\n") {
		c.lines = append(c.lines, line)
		fmt.Fprintf(f, "%s stdout F %s\n", time.Now().UTC().Format(time.RFC3339Nano), line)
	}
	return len(p), nil
}

// launches counts launch lines.
func (c *criLog) launches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, l := range c.lines {
		if strings.Contains(l, "?token=") {
			n++
		}
	}
	return n
}

var appRequestLine = regexp.MustCompile(`^dsh web: [A-Z]+ (\S+) \d+ \d+ms$`)

// requests lists the paths of requests the app has answered.
func (c *criLog) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.lines {
		if m := appRequestLine.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// pod is one simulated sandbox pod: an agent app on loopback whose stdout
// lands in a CRI log file under its node's log root.
type pod struct {
	t      testing.TB
	name   string
	uid    string
	addr   string
	events time.Duration
	log    *criLog
	cancel context.CancelFunc
	done   chan error
}

// startPod runs an agent app for a pod on its node's log root, sending
// SSE events every events (zero means 200ms).
func startPod(t testing.TB, logRoot, name, uid string, events time.Duration) *pod {
	t.Helper()
	dir := filepath.Join(logRoot, testNS+"_"+name+"_"+uid, "dsh")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &pod{t: t, name: name, uid: uid, events: cmp.Or(events, 200*time.Millisecond), log: &criLog{path: filepath.Join(dir, "0.log")}}
	p.start(t.TempDir(), "127.0.0.1:0")
	t.Cleanup(p.stop)
	return p
}

func (p *pod) start(dataDir, addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	app := agentapp.New(agentapp.Options{
		Stdout: p.log, DataDir: dataDir, TrustedHosts: []string{testHost},
		EventInterval: p.events, ShutdownTimeout: time.Second,
	})
	before := p.log.launches()
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan error, 1)
	go func() { p.done <- app.Serve(ctx, ln) }()
	// Ready once the launch line is logged, like the kubelet's probe.
	testkit.Eventually(p.t, "app launch line", func() bool { return p.log.launches() > before })
}

func (p *pod) stop() {
	if p.cancel != nil {
		p.cancel()
		<-p.done
		p.cancel = nil
	}
}

// restart replaces the app with a new process on the same address: a new
// launch token and new cookies, as after a container restart.
func (p *pod) restart() {
	p.stop()
	p.start(p.t.TempDir(), p.addr)
}
