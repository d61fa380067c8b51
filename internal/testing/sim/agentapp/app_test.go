package agentapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

var launchLine = regexp.MustCompile(`(?m)^dsh web: listening on http://(\S+)/\?token=([A-Za-z0-9._~-]+)$`)

// defaultToken is the shape of the token DSH Web prints: 32 random bytes
// in base64url.
var defaultToken = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// testApp is one App serving on a real loopback listener.
type testApp struct {
	t      *testing.T
	addr   string // host:port from the launch line
	base   string // http://addr
	token  string // read back from stdout, like the handshake does
	opts   Options
	stdout *logbuf.Buffer
	stderr *logbuf.Buffer
	client *http.Client
	stop   func() error
}

// startApp serves New(opts) on 127.0.0.1 until the test ends or stop is
// called. A zero DataDir gets a fresh temporary directory.
func startApp(t *testing.T, opts Options) *testApp {
	t.Helper()
	return startAppOn(t, "127.0.0.1", opts)
}

func startAppOn(t *testing.T, host string, opts Options) *testApp {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	stdout, stderr := &logbuf.Buffer{}, &logbuf.Buffer{}
	opts.Stdout, opts.Stderr = stdout, stderr
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	app := New(opts)
	go func() { served <- app.Serve(ctx, ln) }()

	tr := &http.Transport{}
	ta := &testApp{
		t:      t,
		opts:   opts,
		stdout: stdout,
		stderr: stderr,
		client: &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
	}
	var once sync.Once
	var serveErr error
	ta.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-served:
			case <-time.After(15 * time.Second):
				serveErr = errors.New("Serve did not return after cancel")
			}
			tr.CloseIdleConnections()
		})
		return serveErr
	}
	t.Cleanup(func() {
		if err := ta.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})

	testkit.EventuallyNil(t, "the launch line", func() error {
		select {
		case err := <-served:
			t.Fatalf("Serve returned before the launch line: %v", err)
		default:
		}
		m := launchLine.FindStringSubmatch(stdout.String())
		if m == nil {
			return fmt.Errorf("stdout so far: %q", stdout.String())
		}
		ta.addr, ta.token = m[1], m[2]
		return nil
	})
	if ta.addr != ln.Addr().String() {
		t.Fatalf("launch line address %q, listening on %q", ta.addr, ln.Addr())
	}
	ta.base = "http://" + ta.addr
	return ta
}

// response is a finished response with its body read.
type response struct {
	*http.Response
	body string
}

// do sends a request to the app; edit, if not nil, adjusts it first.
func (ta *testApp) do(method, target string, body io.Reader, cookie *http.Cookie, edit func(*http.Request)) response {
	ta.t.Helper()
	req, err := http.NewRequestWithContext(ta.t.Context(), method, ta.base+target, body)
	if err != nil {
		ta.t.Fatalf("new request: %v", err)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	if edit != nil {
		edit(req)
	}
	resp, err := ta.client.Do(req)
	if err != nil {
		ta.t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ta.t.Fatalf("%s %s: read body: %v", method, target, err)
	}
	return response{Response: resp, body: string(b)}
}

func (ta *testApp) get(target string, cookie *http.Cookie) response {
	ta.t.Helper()
	return ta.do(http.MethodGet, target, nil, cookie, nil)
}

// login performs the launch-token exchange and returns the auth cookie.
func (ta *testApp) login() *http.Cookie {
	ta.t.Helper()
	resp := ta.get("/?token="+ta.token, nil)
	if resp.StatusCode != http.StatusSeeOther {
		ta.t.Fatalf("token exchange: status %d, want 303", resp.StatusCode)
	}
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, CookiePrefix) {
			return c
		}
	}
	ta.t.Fatalf("token exchange set no %s cookie: %q", CookiePrefix, resp.Header.Values("Set-Cookie"))
	return nil
}

func TestLaunchLine(t *testing.T) {
	ta := startApp(t, Defaults())
	cookie := ta.login()
	ta.get("/?token=wrong", nil)
	ta.get("/", cookie)
	if err := ta.stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}

	out, errOut := ta.stdout.String(), ta.stderr.String()
	if !defaultToken.MatchString(ta.token) {
		t.Errorf("token %q is not 43 base64url characters", ta.token)
	}
	if n := len(launchLine.FindAllString(out, -1)); n != 1 {
		t.Errorf("stdout has %d launch lines, want 1:\n%s", n, out)
	}
	if n := strings.Count(out+errOut, ta.token); n != 1 {
		t.Errorf("token appears %d times in the output, want once (the launch line)", n)
	}
	if strings.Contains(out+errOut, cookie.Value) {
		t.Errorf("the auth cookie value appears in the output")
	}
	if !strings.Contains(out, "dsh web: GET / 303") {
		t.Errorf("stdout lacks the access-log line of the token exchange:\n%s", out)
	}
	if !strings.Contains(errOut, "dsh web: stopped") {
		t.Errorf("stderr lacks the stop line:\n%s", errOut)
	}
}

func TestOptionsValidate(t *testing.T) {
	valid := Defaults()
	valid.DataDir = t.TempDir()
	tests := []struct {
		name string
		edit func(*Options)
		want []string // substrings of the error; none means valid
	}{
		{name: "defaults with data dir", edit: func(*Options) {}},
		{name: "zero intervals", edit: func(o *Options) { o.EventInterval, o.TickInterval = 0, 0 }},
		{name: "trusted host with port", edit: func(o *Options) { o.TrustedHosts = []string{"sandgate.example:443"} }},
		{name: "no data dir", edit: func(o *Options) { o.DataDir = "" }, want: []string{"data dir"}},
		{
			name: "every problem at once",
			edit: func(o *Options) {
				o.DataDir = ""
				o.TokenFile = "run/token"
				o.TrustedHosts = []string{"", "a b"}
				o.EventInterval = -1
				o.TickInterval = -1
				o.MaxUploadBytes = -1
				o.ShutdownTimeout = -1
			},
			want: []string{"data dir", `token file "run/token"`, `trusted host ""`, `trusted host "a b"`, "event interval", "tick interval", "max upload", "shutdown timeout"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid
			tt.edit(&o)
			err := o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: nil, want errors %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestServeRejectsInvalidOptions(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := New(Options{}).Serve(t.Context(), ln); err == nil || !strings.Contains(err.Error(), "data dir") {
		t.Fatalf("Serve without data dir: %v, want a data dir error", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatalf("listener still open after Serve failed")
	}
}
