package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// helperEnv makes the test binary run main, for the signal test.
const helperEnv = "SANDGATE_AGENT_STANDIN_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		main()
	}
	goleak.VerifyTestMain(m)
}

var launchLine = regexp.MustCompile(`(?m)^dsh web: listening on http://(\S+)/\?token=([A-Za-z0-9_-]{43})$`)

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"web", "--help"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, testkit.Env(nil), &out, &errOut); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errOut.String())
		}
		for _, want := range []string{"Usage: agent-standin web", "STAND-IN for DSH Web", "-host", "-port", "-token-file", "DSH_HOME", "DSH_TRUSTED_HOSTS", "DSH_TOKEN_FILE"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%q: help lacks %q", args, want)
			}
		}
	}
}

// TestTemplateArgs loads what manifests/sandbox/template.yaml passes.
func TestTemplateArgs(t *testing.T) {
	o, err := load([]string{"web", "--host", "0.0.0.0", "--port", "3080"}, testkit.Env(map[string]string{
		"HOME": "/workspace", "DSH_HOME": "/home/node/.dsh", "DSH_PERMISSION_MODE": "danger-full-access",
		"DSH_TRUSTED_HOSTS": "sandgate.example.com, other.example,",
	}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{Host: "0.0.0.0", Port: 3080, DataDir: "/home/node/.dsh", TrustedHosts: []string{"sandgate.example.com", "other.example"}}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
}

func TestDataDirFromHome(t *testing.T) {
	o, err := load([]string{"web"}, testkit.Env(map[string]string{"HOME": "/workspace"}), &bytes.Buffer{})
	if err != nil || o.DataDir != "/workspace/.dsh" || o.Host != "127.0.0.1" || o.Port != 3080 {
		t.Errorf("load = %+v, %v; want data in /workspace/.dsh on 127.0.0.1:3080", o, err)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		env  map[string]string
		want []string
	}{
		{args: nil, want: []string{`the only command is "web"`}},
		{args: []string{"serve"}, want: []string{`the only command is "web"`}},
		{args: []string{"web", "extra"}, env: map[string]string{"HOME": "/h"}, want: []string{`unexpected arguments ["extra"]`}},
		{args: []string{"web", "--port", "70000", "--host", ""}, env: map[string]string{"DSH_TRUSTED_HOSTS": "a b"},
			want: []string{"--port 70000", "--host must not be empty", "DSH_HOME", `trusted host "a b"`}},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tt.args, testkit.Env(tt.env), &out, &errOut)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2", tt.args, code)
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut.String(), w) {
				t.Errorf("%q: stderr %q lacks %q", tt.args, errOut.String(), w)
			}
		}
	}
}

// standin is one run of the command on a free loopback port.
type standin struct {
	stdout, stderr *logbuf.Buffer
	base, token    string
	stop           func() int
}

// start runs the command with dataDir as DSH_HOME, and extra arguments.
func start(t *testing.T, dataDir string, extra ...string) *standin {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &standin{stdout: &logbuf.Buffer{}, stderr: &logbuf.Buffer{}}
	ended := make(chan struct{})
	code := 0
	go func() {
		defer close(ended)
		code = run(ctx, append([]string{"web", "--host", "127.0.0.1", "--port", "0"}, extra...),
			testkit.Env(map[string]string{"DSH_HOME": dataDir, "DSH_TRUSTED_HOSTS": "sandgate.example"}), s.stdout, s.stderr)
	}()
	s.stop = sync.OnceValue(func() int {
		cancel()
		<-ended
		return code
	})
	t.Cleanup(func() { s.stop() })
	launched := testkit.Poll(t.Context(), testkit.Timeout, func() bool {
		select {
		case <-ended:
			t.Fatalf("exit %d before the launch line: %s", code, s.stderr)
		default:
		}
		return launchLine.MatchString(s.stdout.String())
	})
	if !launched {
		t.Fatalf("no launch line; stdout %q stderr %q", s.stdout, s.stderr)
	}
	m := launchLine.FindStringSubmatch(s.stdout.String())
	s.base, s.token = "http://"+m[1], m[2]
	return s
}

// send sends one request with the given Host and returns the response.
func (s *standin) send(t *testing.T, method, target, host, cookie, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.base+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (s *standin) login(t *testing.T) string {
	t.Helper()
	resp := s.send(t, http.MethodGet, "/?token="+s.token, "localhost", "", "")
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("token exchange: %d, cookies %q", resp.StatusCode, resp.Header.Values("Set-Cookie"))
	}
	return cookies[0].Name + "=" + cookies[0].Value
}

// TestServeKeepsDataAcrossRestarts runs the stand-in twice on one DSH_HOME,
// as a suspended and resumed pod does on its volume.
func TestServeKeepsDataAcrossRestarts(t *testing.T) {
	dataDir := t.TempDir()
	first := start(t, dataDir)
	for host, want := range map[string]int{"localhost:3080": http.StatusOK, "sandgate.example": http.StatusOK, "10.244.0.9:3080": http.StatusBadRequest} {
		if got := first.send(t, http.MethodGet, "/favicon.svg", host, "", "").StatusCode; got != want {
			t.Errorf("probe with Host %s: %d, want %d", host, got, want)
		}
	}
	cookie := first.login(t)
	if got := first.send(t, http.MethodPost, "/api/messages", "localhost", cookie, `{"text":"remember me"}`).StatusCode; got != http.StatusCreated {
		t.Fatalf("post message: %d", got)
	}
	if code := first.stop(); code != 0 {
		t.Fatalf("first run exit %d: %s", code, first.stderr)
	}
	if !strings.Contains(first.stdout.String(), "dsh web: POST /api/messages 201") {
		t.Errorf("stdout lacks the access-log line: %q", first.stdout)
	}

	second := start(t, dataDir)
	if second.token == first.token {
		t.Error("a restart kept the launch token")
	}
	if got := second.send(t, http.MethodGet, "/", "localhost", cookie, "").StatusCode; got != http.StatusUnauthorized {
		t.Errorf("old cookie after restart: %d, want 401", got)
	}
	if !strings.Contains(second.stdout.String(), "1 messages in conversation log") {
		t.Errorf("restart did not load the conversation from DSH_HOME: %q", second.stdout)
	}
}

// TestTokenFile: --token-file, or DSH_TOKEN_FILE, makes the stand-in write
// the token of its launch line to that file, for TOKEN_SOURCE=file.
func TestTokenFile(t *testing.T) {
	o, err := load([]string{"web"}, testkit.Env(map[string]string{"HOME": "/h", "DSH_TOKEN_FILE": "/run/dsh/token"}), &bytes.Buffer{})
	if err != nil || o.TokenFile != "/run/dsh/token" {
		t.Errorf("DSH_TOKEN_FILE: %+v, %v", o, err)
	}
	o, err = load([]string{"web", "--token-file", "/run/other"}, testkit.Env(map[string]string{"HOME": "/h", "DSH_TOKEN_FILE": "/run/dsh/token"}), &bytes.Buffer{})
	if err != nil || o.TokenFile != "/run/other" {
		t.Errorf("--token-file over DSH_TOKEN_FILE: %+v, %v", o, err)
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"web", "--token-file", "run/token"}, testkit.Env(map[string]string{"HOME": "/h"}), &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), `token file "run/token"`) {
		t.Errorf("relative --token-file: exit %d, %q", code, errOut.String())
	}

	path := filepath.Join(t.TempDir(), "token")
	s := start(t, t.TempDir(), "--token-file", path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(data)); got != s.token {
		t.Errorf("token file holds %q, the launch line %q", got, s.token)
	}
}

// TestSIGTERM runs the binary and stops it the way the kubelet does.
func TestSIGTERM(t *testing.T) {
	cmd := exec.Command(os.Args[0], "web", "--port", "0")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "DSH_HOME="+t.TempDir())
	stdout, stderr := &logbuf.Buffer{}, &logbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	testkit.Eventually(t, "the launch line on stdout", func() bool { return launchLine.MatchString(stdout.String()) })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr %q", err, stderr)
	}
	if !strings.Contains(stderr.String(), "dsh web: stopped") {
		t.Errorf("stderr lacks the stop line: %q", stderr)
	}
}
