package authapi

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

const (
	wakePath     = "/internal/v1/wake"
	activityPath = "/internal/v1/activity"
)

// boundSandbox waits for claim name to be bound and returns its Sandbox.
func (e *env) boundSandbox(t *testing.T, claim string) string {
	t.Helper()
	var sb string
	testkit.Eventually(t, "claim "+claim+" bound", func() bool {
		c, err := e.claims.Get(t.Context(), claim, metav1.GetOptions{})
		if err == nil {
			sb = sandboxOf(c)
		}
		return sb != ""
	})
	return sb
}

func (e *env) mode(t *testing.T, sandbox string) agents.OperatingMode {
	t.Helper()
	sb, err := e.sb.Sandboxes(e.ns).Get(t.Context(), sandbox, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sb.Spec.OperatingMode
}

func (e *env) setMode(t *testing.T, sandbox string, m agents.OperatingMode) {
	t.Helper()
	body := []byte(`{"spec":{"operatingMode":"` + string(m) + `"}}`)
	if _, err := e.sb.Sandboxes(e.ns).Patch(t.Context(), sandbox, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestWake(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	m := NewMetrics(nil)
	in := e.start(t, func(o *Options) { o.Metrics = m })
	in.signupJSON(t, "alice")
	sb := e.boundSandbox(t, DefaultClaimPrefix+"alice")
	proxy := map[string]string{"Authorization": "Bearer " + saToken(t, e.ns, "nodeproxy", DefaultInternalAudience)}
	wake := func(body string) (int, wakeResponse, string) {
		t.Helper()
		resp, got := in.do(t, req{method: "POST", path: wakePath, json: body, header: proxy})
		var out wakeResponse
		if resp.StatusCode == 200 {
			mustJSON(t, got, &out)
		}
		return resp.StatusCode, out, got
	}

	e.setMode(t, sb, agents.OperatingModeSuspended)
	code, out, body := wake(`{"user":"alice"}`)
	if code != 200 || !out.Patched || out.User != "alice" || out.Sandbox != sb {
		t.Fatalf("wake suspended: %d %s", code, body)
	}
	if got := e.mode(t, sb); got != agents.OperatingModeRunning {
		t.Errorf("mode after wake %q", got)
	}
	// Idempotent: a Running sandbox is not written again.
	if code, out, body := wake(`{"user":"alice"}`); code != 200 || out.Patched {
		t.Errorf("second wake: %d %s", code, body)
	}
	// By namespace and Sandbox name.
	e.setMode(t, sb, agents.OperatingModeSuspended)
	if code, out, body := wake(`{"namespace":"` + e.ns + `","sandbox":"` + sb + `"}`); code != 200 || !out.Patched || out.User != "alice" {
		t.Errorf("wake by sandbox: %d %s", code, body)
	}
	if got := e.mode(t, sb); got != agents.OperatingModeRunning {
		t.Errorf("mode after wake by sandbox %q", got)
	}
	if got := testutil.ToFloat64(m.Wakes.WithLabelValues("patched")); got != 2 {
		t.Errorf("patched wakes %v, want 2", got)
	}

	// A hand-made claim without our marker is never touched.
	hand := &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "hand-made", Namespace: e.ns},
		Spec:       extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: DefaultWarmPool}},
	}
	if _, err := e.claims.Create(t.Context(), hand, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := e.boundSandbox(t, "hand-made")
	e.setMode(t, other, agents.OperatingModeSuspended)

	for _, tc := range []struct {
		name, body string
		code       int
	}{
		{"unknown user", `{"user":"bob"}`, 404},
		{"invalid user", `{"user":"Not A User"}`, 400},
		{"unmanaged claim's sandbox", `{"namespace":"` + e.ns + `","sandbox":"` + other + `"}`, 404},
		{"unmanaged claim as a user", `{"user":"hand-made"}`, 404},
		{"other namespace", `{"namespace":"elsewhere","sandbox":"` + sb + `"}`, 404},
		{"both", `{"user":"alice","sandbox":"` + sb + `"}`, 400},
		{"neither", `{}`, 400},
	} {
		if code, _, body := wake(tc.body); code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.code)
		}
	}
	if got := e.mode(t, other); got != agents.OperatingModeSuspended {
		t.Errorf("unmanaged sandbox mode %q, want Suspended", got)
	}
	// Internal callers only.
	for name, h := range map[string]map[string]string{
		"anonymous":             nil,
		"other service account": {"Authorization": "Bearer " + saToken(t, e.ns, "intruder", DefaultInternalAudience)},
	} {
		resp, _ := in.do(t, req{method: "POST", path: wakePath, json: `{"user":"alice"}`, header: h})
		if resp.StatusCode != 401 && resp.StatusCode != 403 {
			t.Errorf("%s: %d", name, resp.StatusCode)
		}
	}
}

// fakeActivity is a sweeper stand-in: it leads or names a leader.
type fakeActivity struct {
	mu       sync.Mutex
	leading  bool
	leader   sweeper.Leader
	noLeader bool
	observed atomic.Int32
}

func (f *fakeActivity) set(leading, noLeader bool, l sweeper.Leader) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leading, f.noLeader, f.leader = leading, noLeader, l
}

func (f *fakeActivity) Observe(activity.Report) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.leading {
		return sweeper.ErrNotLeader
	}
	f.observed.Add(1)
	return nil
}

func (f *fakeActivity) Leader() (sweeper.Leader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noLeader {
		return sweeper.Leader{}, sweeper.ErrNoLeader
	}
	return f.leader, nil
}

func TestActivityReports(t *testing.T) {
	e := newEnv(t)
	// The leader stand-in records what was forwarded to it.
	var forwarded atomic.Int32
	var gotAuth, gotMark atomic.Value
	var refuse atomic.Bool
	leaderSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() {
			w.WriteHeader(503)
			return
		}
		if r.URL.Path != activityPath {
			http.NotFound(w, r)
			return
		}
		if _, err := activity.DecodeReport(r.Body); err != nil {
			http.Error(w, "bad", 400)
			return
		}
		gotAuth.Store(r.Header.Get("Authorization"))
		gotMark.Store(r.Header.Get(ForwardedHeader))
		forwarded.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(leaderSrv.Close)
	leaderAddr := strings.TrimPrefix(leaderSrv.URL, "http://")

	fake := &fakeActivity{}
	in := e.start(t, func(o *Options) { o.Activity = fake })
	token := "Bearer " + saToken(t, e.ns, "nodeproxy", DefaultInternalAudience)
	proxy := map[string]string{"Authorization": token}
	report := `{"node":"node-a","sent_at":` + itoa(time.Now().UnixMilli()) + `,"entries":[{"namespace":"` + e.ns +
		`","sandbox":"sb-1","last_activity":1,"in_flight":1,"open_websockets":0}]}`
	_, jwks := in.do(t, req{method: "GET", path: "/.well-known/jwks.json"})
	version := jwt.JWKSVersion([]byte(jwks))
	post := func(body string, h map[string]string) int {
		t.Helper()
		resp, _ := in.do(t, req{method: "POST", path: activityPath, json: body, header: h})
		if h != nil {
			if got := resp.Header.Get(activity.JWKSVersionHeader); got != version {
				t.Errorf("answer %d names JWKS version %q, want the served JWKS's %q", resp.StatusCode, got, version)
			}
		}
		return resp.StatusCode
	}

	// Leader: observed, 204.
	fake.set(true, false, sweeper.Leader{})
	if code := post(report, proxy); code != 204 || fake.observed.Load() != 1 {
		t.Errorf("leader: %d, observed %d", code, fake.observed.Load())
	}
	if code := post(`{"node":"Not Valid"}`, proxy); code != 400 {
		t.Errorf("invalid report: %d, want 400", code)
	}
	if code := post(report, nil); code != 401 {
		t.Errorf("anonymous: %d, want 401", code)
	}
	// Not the leader: passed on once, with the caller's token.
	fake.set(false, false, sweeper.Leader{Addr: leaderAddr})
	if code := post(report, proxy); code != 204 || forwarded.Load() != 1 {
		t.Errorf("forward: %d, forwarded %d", code, forwarded.Load())
	}
	if gotAuth.Load() != token || gotMark.Load() == "" {
		t.Errorf("forwarded with Authorization %v and mark %q", gotAuth.Load() == token, gotMark.Load())
	}
	// Already forwarded: never passed on again.
	h := map[string]string{"Authorization": token, ForwardedHeader: "1"}
	resp, _ := in.do(t, req{method: "POST", path: activityPath, json: report, header: h})
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || forwarded.Load() != 1 {
		t.Errorf("forwarded twice: %d Retry-After %q, forwarded %d", resp.StatusCode, resp.Header.Get("Retry-After"), forwarded.Load())
	}
	// The leader is this replica but it does not lead now (handover), or no
	// leader is known: 503.
	fake.set(false, false, sweeper.Leader{Addr: leaderAddr, Self: true})
	if code := post(report, proxy); code != 503 {
		t.Errorf("handover: %d, want 503", code)
	}
	fake.set(false, true, sweeper.Leader{})
	if code := post(report, proxy); code != 503 || forwarded.Load() != 1 {
		t.Errorf("no leader: %d, forwarded %d", code, forwarded.Load())
	}
	// A leader that refuses: 503.
	fake.set(false, false, sweeper.Leader{Addr: leaderAddr})
	refuse.Store(true)
	if code := post(report, proxy); code != 503 {
		t.Errorf("leader refused: %d, want 503", code)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
