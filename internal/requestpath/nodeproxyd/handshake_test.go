package nodeproxyd

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// Test pod identity and tokens.
const (
	podNS, podName, podUID = "sandgate", "dsh-pool-x7k2p", "0b6e2a5c-3f1d-4e8a-9c7b-1a2b3c4d5e6f"
	// defaultToken is in a default launch line; customToken is what a
	// custom TOKEN_PATTERN finds; fileToken is in the token file.
	defaultToken = "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5"
	customToken  = "9f86d081884c7d659a2feaa0c55ad015"
	fileToken    = "n4bQgYhMfWWaL-qgxVrQFQ"
)

// TestHandshakeSettings: the launch-token settings are checked at start and
// every problem is named by its variable.
func TestHandshakeSettings(t *testing.T) {
	base := map[string]string{"NODE_NAME": "n1"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string // parts of the error; none means valid
	}{
		{"defaults", nil, nil},
		{"custom pattern", map[string]string{"TOKEN_PATTERN": `^app: key=(?P<token>\S+)$`, "TOKEN_STREAM": "stderr"}, nil},
		{"file source", map[string]string{"TOKEN_SOURCE": "file", "TOKEN_FILE": "volumes/kubernetes.io~empty-dir/run/token"}, nil},
		{"unknown source", map[string]string{"TOKEN_SOURCE": "api"}, []string{`TOKEN_SOURCE "api" must be log or file`}},
		{"pattern does not compile", map[string]string{"TOKEN_PATTERN": `token=(`}, []string{"TOKEN_PATTERN: compile token pattern"}},
		{"pattern without a token group", map[string]string{"TOKEN_PATTERN": `token=(\S+)`}, []string{"TOKEN_PATTERN: token pattern has no (?P<token>...) group"}},
		{"unknown stream", map[string]string{"TOKEN_STREAM": "stdin"}, []string{`TOKEN_STREAM: token stream "stdin"`}},
		{"file outside the pod", map[string]string{"TOKEN_SOURCE": "file", "TOKEN_FILE": "../other/token", "KUBELET_PODS_DIR": "pods"},
			[]string{`TOKEN_FILE: token file "../other/token"`, `KUBELET_PODS_DIR: pods root "pods"`}},
		{"file source with a pattern", map[string]string{"TOKEN_SOURCE": "file", "TOKEN_PATTERN": `(?P<token>x)`}, []string{"TOKEN_PATTERN applies to TOKEN_SOURCE=log only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := validated(t, base, tc.env)
			if len(tc.want) == 0 && err != nil {
				t.Fatalf("validate() = %v", err)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("validate() = %v, want %q", err, w)
				}
			}
		})
	}
}

// TestHandshakeWiring builds the handshaker from the environment as Assemble
// does and checks which token it exchanges: TOKEN_PATTERN, TOKEN_STREAM,
// TOKEN_SOURCE, KUBELET_PODS_DIR and TOKEN_FILE all reach it.
func TestHandshakeWiring(t *testing.T) {
	logRoot, podsDir := t.TempDir(), t.TempDir()
	writeLog(t, logRoot,
		"stdout F dsh web: listening on http://0.0.0.0:3080/?token="+defaultToken,
		"stderr F app ready, key "+customToken,
		"stdout F dsh web: GET /x&token="+strings.Repeat("p", 43)+" 401 0ms",
	)
	tokenFile := "volumes/kubernetes.io~empty-dir/run/token"
	writeTokenFile(t, filepath.Join(podsDir, podUID, tokenFile), fileToken+"\n")

	for _, tc := range []struct {
		name, source string
		env          map[string]string
		want         string
	}{
		{"default launch line", "log", nil, defaultToken},
		{"TOKEN_PATTERN and TOKEN_STREAM", "log", map[string]string{
			"TOKEN_PATTERN": `^app ready, key (?P<token>[0-9a-f]{32})$`, "TOKEN_STREAM": "stderr",
		}, customToken},
		{"token file", "file", map[string]string{
			"TOKEN_SOURCE": "file", "KUBELET_PODS_DIR": podsDir, "TOKEN_FILE": tokenFile,
		}, fileToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := validated(t, map[string]string{"NODE_NAME": "n1", "LOG_ROOT": logRoot}, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			app := newTokenApp(t, tc.want)
			reg := prometheus.NewRegistry()
			hs, err := handshake.New(c.handshakeOptions(slog.New(slog.DiscardHandler), reg))
			if err != nil {
				t.Fatal(err)
			}
			defer hs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cookie, err := hs.Cookie(ctx, handshake.Target{
				User: "bob", Namespace: podNS, Pod: podName, PodUID: podUID, Container: "dsh", Addr: app.addr,
			})
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if cookie != "dsh-auth-1=ok" {
				t.Errorf("cookie %q", cookie)
			}
			if got := app.tokens(); !slices.Equal(got, []string{tc.want}) {
				t.Errorf("app was sent %q, want only %q", got, tc.want)
			}
			if ok, _ := testkit.Gathered(t, reg, "sandgate_handshake_total", map[string]string{"result": "ok", "source": tc.source}); ok != 1 {
				t.Errorf("sandgate_handshake_total{result=ok,source=%s} = %v", tc.source, ok)
			}
		})
	}
}

// writeLog writes CRI records ("<stream> <tag> <text>") as the test pod's
// current log file.
func writeLog(t *testing.T, root string, records ...string) {
	t.Helper()
	dir := filepath.Join(root, podNS+"_"+podName+"_"+podUID, "dsh")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	ts := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	for i, r := range records {
		fmt.Fprintf(&b, "%s %s\n", ts.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), r)
	}
	if err := os.WriteFile(filepath.Join(dir, "0.log"), []byte(b.String()), 0o640); err != nil {
		t.Fatal(err)
	}
}

func writeTokenFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tokenApp is the agent app's token exchange: it accepts one token and
// records every token it is sent.
type tokenApp struct {
	addr string
	mu   sync.Mutex
	seen []string
}

func newTokenApp(t *testing.T, accept string) *tokenApp {
	t.Helper()
	a := &tokenApp{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := r.URL.Query().Get("token")
		a.mu.Lock()
		a.seen = append(a.seen, tok)
		a.mu.Unlock()
		if tok != accept {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "dsh-auth-1", Value: "ok", Path: "/"})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	}))
	t.Cleanup(srv.Close)
	a.addr = srv.Listener.Addr().String()
	return a
}

func (a *tokenApp) tokens() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.seen)
}
