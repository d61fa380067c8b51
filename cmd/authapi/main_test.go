package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/accountpath/authapid"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
	}
	testkit.Main(m)
}

func runCmd(t *testing.T, args []string, e map[string]string, stdin string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, testkit.Env(e), strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestHelpListsEverySetting(t *testing.T) {
	code, out, _ := runCmd(t, []string{"--help"}, map[string]string{"SIGNUP_INVITE_CODE": "hush"}, "")
	if code != 0 {
		t.Fatalf("--help exits %d", code)
	}
	d := authapid.Defaults()
	for _, s := range d.Settings() {
		if !strings.Contains(out, "--"+s.Flag+" ["+s.Env+"]") {
			t.Errorf("--help lacks --%s [%s]", s.Flag, s.Env)
		}
	}
	if strings.Contains(out, "hush") {
		t.Error("--help prints the invite code")
	}
	code, _, errOut := runCmd(t, []string{"jwt", "inspect", "--help"}, nil, "")
	if code != 0 || !strings.Contains(errOut, "--jwks-url") || !strings.Contains(errOut, "revoked") {
		t.Errorf("jwt inspect --help: %d %s", code, errOut)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	code, _, errOut := runCmd(t, nil, map[string]string{
		"COOKIE_SECURE": "false", "SESSION_TOKEN_TTL": "5s", "MAX_BODY_MB": "zero", "TRUSTED_PROXIES": "not-a-cidr",
		"CLAIM_PREFIX": "Bad_", "INTERNAL_ALLOWED_SERVICE_ACCOUNTS": "nodeproxy", "LOG_LEVEL": "loud",
		"SIGNUP_INVITE_CODE": "a", "SIGNUP_INVITE_CODE_FILE": "/x", "OPS_ADDR": ":8080", "DRAIN_DELAY": "-1",
		"SIGNUP_BUDGET": "0", "INTERNAL_REVIEW_BUDGET": "-3", "KEY_PUBLISH_DELAY": "0", "KEY_ROTATION_INTERVAL": "1m",
		"ADMINS": "ops,Root", "ADMIN_GROUPS": "staff",
	}, "")
	if code != 2 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"ALLOW_INSECURE_COOKIES=1", "SESSION_TOKEN_TTL", "MAX_BODY_MB", "TRUSTED_PROXIES", "CLAIM_PREFIX",
		"INTERNAL_ALLOWED_SERVICE_ACCOUNTS", "LOG_LEVEL", "not both", "must differ", "DRAIN_DELAY -1s",
		"SIGNUP_BUDGET 0 must be at least 1", "INTERNAL_REVIEW_BUDGET -3 must be at least 1", "KEY_PUBLISH_DELAY 0s must be positive",
		"KEY_ROTATION_INTERVAL 1m0s with COOKIE_MAX_AGE 168h0m0s keeps about", "signing keys, more than 1000 fit",
		`ADMINS entry "Root"`, "ADMIN_GROUPS needs AUTH_PROXY_HEADER"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("validation output lacks %s:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, `"a"`) {
		t.Error("validation output shows the invite code")
	}
}

// TestJWTInspect runs the subcommand on tokens signed by a ring written to
// disk, as the Secret holds it, and as the JWKS serves it.
func TestJWTInspect(t *testing.T) {
	dir := t.TempDir()
	ring := jwt.NewKeyRing(time.Now())
	signer, _ := jwt.NewSigner(jwt.SignerOptions{KeyRing: ring, Issuer: authapi.DefaultIssuer, Audience: authapi.DefaultAudience})
	tok, _ := signer.Sign(jwt.Claims{User: "alice", Epoch: 3})
	jwks, _ := ring.JWKS()
	ringJSON, _ := ring.Marshal()
	jwksFile, ringFile := filepath.Join(dir, "jwks.json"), filepath.Join(dir, "ring.json")
	_ = os.WriteFile(jwksFile, jwks, 0o600)
	_ = os.WriteFile(ringFile, ringJSON, 0o600)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(jwks) }))
	defer srv.Close()
	other := jwt.NewKeyRing(time.Now())
	otherJWKS, _ := other.JWKS()
	otherFile := filepath.Join(dir, "other.json")
	_ = os.WriteFile(otherFile, otherJWKS, 0o600)

	cases := []struct {
		name    string
		args    []string
		stdin   string
		code    int
		verdict string
	}{
		{"jwks file", []string{"--key-file", jwksFile, tok}, "", 0, "valid"},
		{"ring file", []string{"--key-file", ringFile, tok}, "", 0, "valid"},
		{"jwks url", []string{"--jwks-url", srv.URL, tok}, "", 0, "valid"},
		{"stdin cookie header", []string{"--key-file", jwksFile}, "Cookie: dsh_gw_session=" + tok + "\n", 0, "valid"},
		{"stdin dash", []string{"--key-file", jwksFile, "-"}, tok, 0, "valid"},
		{"unknown kid", []string{"--key-file", otherFile, tok}, "", 1, "unknown kid"},
		{"bad signature", []string{"--key-file", jwksFile, forged(tok)}, "", 1, "bad signature"},
		{"wrong audience", []string{"--key-file", jwksFile, "--audience", "x", tok}, "", 1, "invalid claims"},
		{"malformed", []string{"--key-file", jwksFile, "hello"}, "", 1, "malformed"},
		{"no keys", []string{tok}, "", 2, ""},
		{"two key sources", []string{"--key-file", jwksFile, "--jwks-url", srv.URL, tok}, "", 2, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, append([]string{"jwt", "inspect"}, tc.args...), nil, tc.stdin)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, tc.code, out, errOut)
			}
			if tc.verdict == "" {
				return
			}
			var rep authapi.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("output is not a report: %v\n%s", err, out)
			}
			if rep.Verdict != tc.verdict {
				t.Errorf("verdict %q, want %q (%s)", rep.Verdict, tc.verdict, rep.Detail)
			}
		})
	}
}

// forged changes the first character of tok's signature.
func forged(tok string) string {
	i := strings.LastIndexByte(tok, '.') + 1
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

// TestServeAndShutDown runs the real command against the API server: the
// ops listener reports ready, the public one serves the landing page and
// JWKS (and not /metrics), and cancelling shuts it down cleanly.
func TestServeAndShutDown(t *testing.T) {
	s := startServer(t, nil)
	for path, want := range map[string]int{"/": 200, "/.well-known/jwks.json": 200, "/metrics": 404} {
		if got := testkit.Status("http://" + s.pub + path); got != want {
			t.Errorf("public %s: %d, want %d", path, got, want)
		}
	}
	if resp, err := http.Post("http://"+s.pub+"/login", "application/json", strings.NewReader(`{"user":"alice","token":"x"}`)); err == nil {
		resp.Body.Close()
	}
	for path, want := range map[string]int{"/healthz": 200, "/metrics": 200} {
		if got := testkit.Status("http://" + s.ops + path); got != want {
			t.Errorf("ops %s: %d, want %d", path, got, want)
		}
	}
	if code := s.stop(); code != 0 {
		t.Errorf("exit %d; logs:\n%s", code, s.logs)
	}
	if !strings.Contains(s.logs.String(), `"msg":"audit","log":"audit","replica":"authapi-test","action":"login","user":"alice"`) {
		t.Errorf("no audit event of the login on stderr:\n%s", s.logs)
	}
	if !strings.Contains(s.logs.String(), `"msg":"shutting down"`) {
		t.Errorf("no shutdown log:\n%s", s.logs)
	}
}
