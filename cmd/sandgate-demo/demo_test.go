package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandgate/sandgate/internal/gobuild"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
)

// The demo test's idle timings: short, so that the test sees a suspend
// within a minute, and far enough apart that a report every second keeps
// a used agent visibly awake.
const (
	demoTestIdle   = 20 * time.Second
	demoTestReport = time.Second
)

// TestDemo runs `sandgate-demo` itself, built from this tree, as a user of
// `make demo` would: it signs up two users through the printed URLs, uses
// one agent through both nodes past the idle timeout and leaves the other
// alone, sees the idle one suspended and the used one kept, wakes the idle
// one with a navigation, lists the suspended one with the printed admin
// command as the demo's admin, and stops the demo with Ctrl-C.
func TestDemo(t *testing.T) {
	d := startDemo(t)
	busy, idle := d.client(t), d.client(t)
	signup := time.Now()
	busy.signup(t, d.entries[0], "busy")
	idle.signup(t, d.entries[1], "idle")
	admin := d.client(t)
	admin.signup(t, d.entries[0], demoAdmin)
	for _, entry := range d.entries {
		for _, c := range []*demoClient{busy, idle} {
			if status, body := c.get(t, entry+"u/"+c.user+"/", false); status != http.StatusOK {
				t.Fatalf("%s through %s: %d %s", c.user, entry, status, body)
			}
		}
	}
	idleSince := time.Now()

	// The busy user keeps using the agent, through both nodes in turn.
	ctx, stopUse := context.WithCancel(t.Context())
	var used sync.WaitGroup
	used.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			if status, body := busy.get(t, d.entries[i%2]+"u/busy/", false); status != http.StatusOK && ctx.Err() == nil {
				t.Errorf("busy agent answered %d: %s", status, body)
			}
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
	})

	suspendedAt := d.waitMode(t, "idle", agents.OperatingModeSuspended, 3*demoTestIdle)
	if waited := suspendedAt.Sub(idleSince); waited < demoTestIdle {
		t.Errorf("idle agent suspended %v after its last request, before the idle timeout %v", waited, demoTestIdle)
	}
	t.Logf("idle agent suspended %v after its last request", suspendedAt.Sub(idleSince).Round(time.Second))
	d.adminList(t, admin, "--state", "Suspended", "--q", "idle")
	for time.Since(signup) < 2*demoTestIdle {
		if mode := d.mode(t, "busy"); mode != agents.OperatingModeRunning {
			t.Fatalf("busy agent %s %v after signup, while in use", mode, time.Since(signup).Round(time.Second))
		}
		time.Sleep(demoTestReport)
	}
	stopUse()
	used.Wait()

	status, body := idle.get(t, d.entries[1]+"u/idle/", true)
	if status != http.StatusOK && status != http.StatusServiceUnavailable {
		t.Fatalf("navigation to the suspended agent: %d %s", status, body)
	}
	d.waitMode(t, "idle", agents.OperatingModeRunning, demoTestIdle)
	if status, body := idle.get(t, d.entries[0]+"u/idle/", false); status != http.StatusOK {
		t.Fatalf("woken agent: %d %s", status, body)
	}
	d.stop(t)
}

// demo is a running sandgate-demo process.
type demo struct {
	cmd        *exec.Cmd
	bin        string   // where the demo, authapi and nodeproxy were built
	entries    []string // node entry URLs, ending in /
	sandboxes  *sandboxapi.Client
	namespace  string
	tmp        string
	out        *syncBuffer
	exited     chan error
	stopOnce   sync.Once
	stopResult error
}

// startDemo builds the demo, the auth API and the node proxy from this
// tree and runs the demo until its ready line.
func startDemo(t *testing.T) *demo {
	t.Helper()
	root, err := clustertest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	crds, _, err := clustertest.CRDs(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := gobuild.Command(t.Context(), root, bin, "./cmd/sandgate-demo", "./cmd/authapi", "./cmd/nodeproxy")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	d := &demo{bin: bin, tmp: t.TempDir(), out: &syncBuffer{}, exited: make(chan error, 1)}
	d.cmd = exec.Command(filepath.Join(bin, "sandgate-demo"), "--bin-dir", bin, "--crds", crds, "--tmp", d.tmp,
		"--http-port", strconv.Itoa(freePortPair(t)), "--idle-timeout", demoTestIdle.String(), "--report-interval", demoTestReport.String())
	d.cmd.Dir = root
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stderr = d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.stop(t) })
	ready := make(chan error, 1)
	go func() {
		ready <- d.readBanner(bufio.NewScanner(io.TeeReader(stdout, d.out)))
		io.Copy(d.out, stdout)
		d.exited <- d.cmd.Wait()
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("%v; the demo said:\n%s", err, d.out)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("demo not ready after 3 minutes; it said:\n%s", d.out)
	}
	return d
}

// readBanner reads the demo's output up to the end of its banner, taking
// the entry URLs and the kubeconfig from it.
func (d *demo) readBanner(lines *bufio.Scanner) error {
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		switch {
		case strings.HasPrefix(line, readyLine):
			d.entries = append(d.entries, strings.TrimPrefix(line, readyLine))
		case strings.HasPrefix(line, "and through node "):
			d.entries = append(d.entries, line[strings.LastIndex(line, " ")+1:])
		case strings.HasPrefix(line, "kubeconfig:"):
			cfg, err := clientcmd.BuildConfigFromFlags("", strings.TrimSpace(strings.TrimPrefix(line, "kubeconfig:")))
			if err != nil {
				return err
			}
			if d.sandboxes, err = sandboxapi.NewForConfig(cfg); err != nil {
				return err
			}
		case strings.HasPrefix(line, "look:"):
			f := strings.Fields(line)
			for i := range f[:len(f)-1] {
				if f[i] == "-n" {
					d.namespace = f[i+1]
				}
			}
		case strings.HasPrefix(line, "Press Ctrl-C"):
			if len(d.entries) != 2 || d.sandboxes == nil || d.namespace == "" {
				return fmt.Errorf("banner lacks the entries, kubeconfig or namespace: %q, %s", d.entries, d.namespace)
			}
			return nil
		}
	}
	return fmt.Errorf("demo output ended before its banner: %v", lines.Err())
}

// stop sends the demo Ctrl-C's signal and checks that it exits cleanly and
// leaves no temporary file behind.
func (d *demo) stop(t *testing.T) {
	t.Helper()
	d.stopOnce.Do(func() {
		d.cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-d.exited:
			d.stopResult = err
		case <-time.After(time.Minute):
			d.cmd.Process.Kill()
			d.stopResult = fmt.Errorf("no exit a minute after Ctrl-C")
		}
		if left, _ := filepath.Glob(filepath.Join(d.tmp, "*")); d.stopResult == nil && len(left) > 0 {
			d.stopResult = fmt.Errorf("left behind %v", left)
		}
	})
	if d.stopResult != nil {
		t.Errorf("demo stop: %v; it said:\n%s", d.stopResult, d.out)
	}
}

// mode is the operating mode of user's Sandbox, found as a user of the
// tour finds it: claim, then its status.sandbox.name.
func (d *demo) mode(t *testing.T, user string) agents.OperatingMode {
	t.Helper()
	ctx := t.Context()
	claim, err := d.sandboxes.SandboxClaims(d.namespace).Get(ctx, "dsh-"+user, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("claim of %s: %v", user, err)
	}
	sb, err := d.sandboxes.Sandboxes(d.namespace).Get(ctx, claim.Status.Sandbox.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("sandbox of %s (%q): %v", user, claim.Status.Sandbox.Name, err)
	}
	return sb.Spec.OperatingMode
}

// waitMode waits up to limit for user's Sandbox to reach mode and returns
// when it was seen there.
func (d *demo) waitMode(t *testing.T, user string, mode agents.OperatingMode, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got := d.mode(t, user)
		if got == mode {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's sandbox still %s after %v; the demo said:\n%s", user, got, limit, d.out)
		}
		time.Sleep(demoTestReport / 2)
	}
}

// adminList runs the tour's admin command with admin's token through the
// second node's entry and expects the idle agent listed Suspended.
func (d *demo) adminList(t *testing.T, admin *demoClient, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), filepath.Join(d.bin, "authapi"), append([]string{"admin", "list"}, args...)...)
	cmd.Env = []string{"SANDGATE_URL=" + d.entries[1], "SANDGATE_ADMIN_TOKEN=" + admin.token}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "idle") || !strings.Contains(string(out), "Suspended") || strings.Contains(string(out), "busy") {
		t.Fatalf("authapi admin list %v: %v\n%s", args, err, out)
	}
	if !strings.Contains(d.out.String(), "admin/accounts") {
		t.Errorf("the demo's tour does not point at the admin page:\n%s", d.out)
	}
}

// demoClient is one user's browser: a cookie jar, and the token its
// signup got.
type demoClient struct {
	http  *http.Client
	user  string
	token string
}

func (d *demo) client(t *testing.T) *demoClient {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &demoClient{http: &http.Client{Jar: jar, Timeout: 2 * time.Minute}}
}

// signup creates user's account through entry, as the tour's curl does.
func (c *demoClient) signup(t *testing.T, entry, user string) {
	t.Helper()
	c.user = user
	resp, err := c.http.Post(entry+"users", "application/json", strings.NewReader(`{"user":"`+user+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusAccepted {
		t.Fatalf("signup %s: %d %s", user, resp.StatusCode, body)
	}
	var out struct{ Token string }
	if err := json.Unmarshal(body, &out); err != nil || out.Token == "" {
		t.Fatalf("signup %s: no token in %s", user, body)
	}
	c.token = out.Token
}

// get fetches url, as a browser's navigation when page is true.
func (c *demoClient) get(t *testing.T, url string, page bool) (int, string) {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if page {
		req.Header.Set("Accept", "text/html")
		req.Header.Set("Sec-Fetch-Mode", "navigate")
		req.Header.Set("Sec-Fetch-Dest", "document")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(body)
}

// freePortPair finds a port p on loopback with p+1 free too: the demo's
// two entry ports.
func freePortPair(t *testing.T) int {
	t.Helper()
	for range 50 {
		a, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := a.Addr().(*net.TCPAddr).Port
		b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1)))
		a.Close()
		if err == nil {
			b.Close()
			return p
		}
	}
	t.Fatal("no two consecutive free ports on loopback")
	return 0
}

// syncBuffer is a bytes.Buffer safe for the demo's output goroutines and
// the test's failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
