package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/internal/testing/clustertest"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// chromiumPath finds Debian's chromium ($SANDGATE_CHROMIUM, else
// /usr/bin/chromium, else chromium on PATH). Without it the tests skip,
// unless CI is set: there a missing browser fails the run.
func chromiumPath(t *testing.T) string {
	t.Helper()
	msg := "chromium not found at /usr/bin/chromium or on PATH (install it with: apt-get install -y chromium)"
	if p := os.Getenv("SANDGATE_CHROMIUM"); p != "" {
		// An explicit path is the only one tried.
		if _, err := os.Stat(p); err == nil {
			return p
		}
		msg = "chromium not found at SANDGATE_CHROMIUM=" + p
	} else {
		if _, err := os.Stat("/usr/bin/chromium"); err == nil {
			return "/usr/bin/chromium"
		}
		if p, err := exec.LookPath("chromium"); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s; CI=%s requires the browser tests to run", msg, os.Getenv("CI"))
	}
	t.Skipf("%s; skipping the browser tests (set CI to make this a failure)", msg)
	return ""
}

// browserTest starts what a browser test needs: Chromium (skipping, or
// failing under CI, without it), the platform in mode, the browser mapped
// onto it, and the test's artifacts directory, where the platform's log
// is kept if t fails.
func browserTest(t *testing.T, mode userorigin.Mode) (p *platform, browser context.Context, dir string) {
	t.Helper()
	chromiumPath(t)
	dir = artifactsDir(t)
	p = startPlatform(t, mode)
	browser = startBrowser(t, p)
	t.Logf("screenshots: %s", dir)
	keepPlatformLog(t, dir, p)
	return p, browser, dir
}

// keepPlatformLog writes p's log into dir if t fails.
func keepPlatformLog(t *testing.T, dir string, p *platform) {
	t.Cleanup(func() {
		if t.Failed() {
			_ = writeFile(dir, "platform.log", p.logs.Bytes())
		}
	})
}

// artifactsDir returns a fresh directory for t's screenshots and logs under
// $SANDGATE_ARTIFACTS, default <module root>/artifacts/browser.
func artifactsDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv("SANDGATE_ARTIFACTS")
	if root == "" {
		mod, err := clustertest.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		root = filepath.Join(mod, "artifacts", "browser")
	}
	dir, err := filepath.Abs(filepath.Join(root, safeName(t.Name())))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func safeName(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

// startBrowser starts one headless Chromium for the test, with a fresh
// profile; the gateway host resolves to the first node proxy and every
// user origin (subdomain routing) to the second. The main origin, plain
// HTTP here, is treated as secure, as the HTTPS it is in production:
// otherwise Chromium sends it no Sec-Fetch-* headers (which the auth API
// needs to hand a session a new token) and ignores its
// Cross-Origin-Opener-Policy and Clear-Site-Data.
func startBrowser(t *testing.T, p *platform) context.Context {
	t.Helper()
	exe := chromiumPath(t)
	host, _, _ := net.SplitHostPort(p.nodes[0].addr)
	userHost, _, _ := net.SplitHostPort(p.nodes[1].addr)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		// Chromium killed at the test's end leaves its singleton socket's
		// directory in TMPDIR: keep it in one the test removes.
		chromedp.Env("TMPDIR=" + t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", "MAP "+gatewayHost+" "+host+", MAP *."+userDomain+" "+userHost),
		chromedp.Flag("unsafely-treat-insecure-origin-as-secure", p.mainOrigin()),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	// Start the browser now. The first run must use browserCtx itself: the
	// browser lives as long as the context of that run.
	if err := chromedp.Do(browserCtx); err != nil {
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	return browserCtx
}

// session is one browser context (its own cookies) with one tab, a
// console log, and numbered screenshots.
type session struct {
	t       *testing.T
	name    string
	ctx     context.Context
	p       *platform
	dir     string
	step    int
	mu      sync.Mutex
	console []string
}

// newSession opens a new browser context in the test's Chromium.
func newSession(t *testing.T, browserCtx context.Context, p *platform, dir, name string) *session {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	s := &session{t: t, name: name, ctx: ctx, dir: dir, p: p}
	// The first run opens the tab, which lives as long as that run's
	// context: use ctx itself.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open browser context %s: %v", name, err)
	}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			s.mu.Lock()
			s.console = append(s.console, time.Now().Format("15:04:05.000")+" "+m.String())
			s.mu.Unlock()
		}
	}()
	return s
}

// url returns the URL of path on the main origin.
func (s *session) url(path string) string { return s.p.mainOrigin() + path }

// do runs one named step: its actions, then a screenshot. A failing step
// fails the test with the paths of its screenshot and console log.
func (s *session) do(what string, timeout time.Duration, f func(ctx context.Context) error) {
	s.t.Helper()
	s.step++
	name := fmt.Sprintf("%02d-%s-%s", s.step, s.name, safeName(what))
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	err := f(ctx)
	cancel()
	shot := s.screenshot(name)
	if err != nil {
		logPath := filepath.Join(s.dir, name+".console.log")
		loc := s.location()
		s.mu.Lock()
		text := strings.Join(s.console, "\n") + "\n"
		s.mu.Unlock()
		if werr := os.WriteFile(logPath, []byte(text), 0o644); werr != nil {
			logPath = "(not written: " + werr.Error() + ")"
		}
		s.t.Fatalf("step %q of %s failed at %s: %v\n  screenshot: %s\n  console log: %s", what, s.name, loc, err, shot, logPath)
	}
}

func (s *session) screenshot(name string) string {
	ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return "(no screenshot: " + err.Error() + ")"
	}
	path := filepath.Join(s.dir, name+".png")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		return "(not written: " + err.Error() + ")"
	}
	return path
}

func (s *session) location() string {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "(unknown location)"
	}
	return loc
}

// navigate loads path on the main origin and returns the document's HTTP
// status (after redirects).
func navigate(ctx context.Context, s *session, path string) (int64, error) {
	return navigateURL(ctx, s.url(path))
}

// navigateURL loads url and returns the document's HTTP status (after
// redirects).
func navigateURL(ctx context.Context, url string) (int64, error) {
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(url))
	if err != nil {
		return 0, fmt.Errorf("navigate to %s: %w", url, err)
	}
	return resp.Status, nil
}

// navigateWant navigates to url and wants the document's status want;
// what names the page in the error.
func navigateWant(ctx context.Context, url string, want int64, what string) error {
	code, err := navigateURL(ctx, url)
	if err != nil {
		return err
	}
	if code != want {
		return fmt.Errorf("%w: %s answered %d, want %d", errUnexpected, what, code, want)
	}
	return nil
}

// reload reloads the page and returns the document's HTTP status.
func reload(ctx context.Context) (int64, error) {
	resp, err := chromedp.RunResponse(ctx, chromedp.Reload())
	if err != nil {
		return 0, fmt.Errorf("reload: %w", err)
	}
	return resp.Status, nil
}

// until evaluates the JavaScript predicate until it is true, across
// navigations and reloads (a waking page that refreshes itself, a form's
// redirect), or until ctx ends.
func until(ctx context.Context, what, predicate string) error {
	var last error
	for {
		ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(ectx, chromedp.Evaluate[bool]("!!("+predicate+")"))
		cancel()
		if err == nil && ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// eval evaluates expression once.
func eval[T any](ctx context.Context, expression string) (T, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[T](expression))
}

// click clicks the first element that matches the CSS selector.
func click(ctx context.Context, sel string) error {
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)); err != nil {
		return fmt.Errorf("click %s: %w", sel, err)
	}
	return nil
}

// typeInto types text into the first element that matches the CSS selector.
func typeInto(ctx context.Context, sel, text string) error {
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(sel), text, chromedp.NodeVisible)); err != nil {
		return fmt.Errorf("type into %s: %w", sel, err)
	}
	return nil
}

var errUnexpected = errors.New("unexpected page")

func writeFile(dir, name string, data []byte) error {
	return os.WriteFile(filepath.Join(dir, name), data, 0o644)
}
