package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdminCommand runs `authapi admin` against the command itself: the
// list and each action through the admin API with an admin's token from
// the environment or a file; refusals exit 1 with the API's reason, usage
// errors 2 before anything is sent.
func TestAdminCommand(t *testing.T) {
	s := startServer(t, map[string]string{"ADMINS": "ops", "WAKE_TIMEOUT": "1s"})
	base := "http://" + s.pub
	signup := func(user string) string {
		t.Helper()
		resp, err := http.Post(base+"/users", "application/json", strings.NewReader(`{"user":"`+user+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Token string }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Token == "" {
			t.Fatalf("signup %s: %d %v", user, resp.StatusCode, err)
		}
		return out.Token
	}
	opsToken, aliceToken := signup("ops"), signup("alice")
	env := map[string]string{"SANDGATE_URL": base, "SANDGATE_ADMIN_TOKEN": opsToken}
	admin := func(env map[string]string, stdin string, args ...string) (int, string, string) {
		t.Helper()
		return runCmd(t, append([]string{"admin"}, args...), env, stdin)
	}

	code, out, errOut := admin(env, "", "list")
	if code != 0 || !strings.Contains(out, "USER") || !strings.Contains(out, "alice") || !strings.Contains(out, "2 accounts; page 1 of 1") {
		t.Fatalf("list: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = admin(env, "", "list", "--q", "ali", "--json")
	var page struct{ Total int }
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || page.Total != 1 {
		t.Errorf("list --q ali --json: %d %s", code, out)
	}
	if code, out, _ = admin(env, "", "show", "alice"); code != 0 || !strings.Contains(out, `"user":"alice"`) {
		t.Errorf("show alice: %d %s", code, out)
	}
	if code, out, errOut = admin(env, "", "budget", "alice", "--tokens-per-day", "20000"); code != 0 {
		t.Errorf("budget alice: %d %s %s", code, out, errOut)
	}
	if code, out, _ = admin(env, "", "show", "alice"); code != 0 || !strings.Contains(out, `"egress_tokens_per_day":20000`) {
		t.Errorf("show alice after the budget: %d %s", code, out)
	}
	if code, _, errOut = admin(env, "", "logout", "alice"); code != 0 {
		t.Errorf("logout alice: %d %s", code, errOut)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(opsToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = admin(map[string]string{"SANDGATE_URL": base}, "", "rotate", "alice", "--token-file", tokenFile)
	var rotated struct{ Token string }
	if code != 0 || json.Unmarshal([]byte(out), &rotated) != nil || rotated.Token == "" || rotated.Token == aliceToken {
		t.Fatalf("rotate alice with --token-file: %d %s %s", code, out, errOut)
	}
	if strings.Contains(errOut, opsToken) {
		t.Error("the admin token is on standard error")
	}

	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"alice is no admin", map[string]string{"SANDGATE_URL": base, "SANDGATE_ADMIN_TOKEN": rotated.Token}, []string{"list"}, 1, "403 admins only"},
		{"unknown account", env, []string{"suspend", "nobody"}, 1, "404"},
		{"delete without --confirm", env, []string{"delete", "alice"}, 2, "--confirm alice"},
		{"delete confirming another", env, []string{"delete", "alice", "--confirm", "ops"}, 2, "--confirm alice"},
		{"no token", map[string]string{"SANDGATE_URL": base}, []string{"list"}, 2, "SANDGATE_ADMIN_TOKEN"},
		{"no address", map[string]string{"SANDGATE_ADMIN_TOKEN": opsToken}, []string{"list"}, 2, "--url"},
		{"plain http across a network", map[string]string{"SANDGATE_URL": "http://sandgate.example.com", "SANDGATE_ADMIN_TOKEN": opsToken}, []string{"list"}, 2, "use https"},
		{"unknown command", env, []string{"promote", "alice"}, 2, "unknown command"},
		{"no user", env, []string{"wake"}, 2, "needs a USER"},
		{"budget without a number", env, []string{"budget", "alice"}, 2, "--tokens-per-day"},
		{"budget not a number", env, []string{"budget", "alice", "--tokens-per-day", "lots"}, 1, "400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := admin(tc.env, "", tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tc.code, tc.want)
			}
		})
	}
	if code, _, errOut = admin(env, "", "delete", "alice", "--confirm", "alice"); code != 0 {
		t.Fatalf("delete alice: %d %s", code, errOut)
	}
	if code, _, errOut = admin(env, "", "show", "alice"); code != 1 {
		t.Errorf("show alice after delete: exit %d %s", code, errOut)
	}
	if code, _, errOut = admin(nil, "", "--help"); code != 0 || !strings.Contains(errOut, "recreate USER --confirm USER") {
		t.Errorf("--help: %d %s", code, errOut)
	}
	if code := s.stop(); code != 0 {
		t.Errorf("the auth API exits %d", code)
	}
}
