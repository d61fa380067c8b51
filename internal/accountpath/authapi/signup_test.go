package authapi

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
)

func TestSignupJSONCreatesTheAccountClaim(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	in := e.start(t, func(o *Options) { o.Metrics = m })

	resp, body := in.do(t, req{method: "POST", path: "/users", json: `{"user":"alice"}`})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("signup: %d %s", resp.StatusCode, body)
	}
	var out accountResponse
	mustJSON(t, body, &out)
	if out.User != "alice" || out.State != StateReady || out.URL != "/u/alice/" || len(out.Token) != 43 {
		t.Errorf("signup answer %+v", out)
	}
	ck := cookie(resp, DefaultCookieName)
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/" || ck.Secure ||
		ck.MaxAge < int(DefaultCookieMaxAge/time.Second)-5 || ck.MaxAge > int(DefaultCookieMaxAge/time.Second) {
		t.Errorf("session cookie %+v", ck)
	}

	c, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(out.Token))
	wantLabels := map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: "alice"}
	for k, v := range wantLabels {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if c.Annotations[account.LabelManagedBy] != account.ManagedByValue {
		t.Errorf("managed-by annotation %q", c.Annotations[account.LabelManagedBy])
	}
	if c.Annotations[account.AnnotationTokenHash] != hex.EncodeToString(sum[:]) {
		t.Errorf("token hash annotation %q is not the SHA-256 of the token", c.Annotations[account.AnnotationTokenHash])
	}
	if c.Annotations[account.AnnotationSessionEpoch] != strconv.Itoa(account.FirstEpoch) {
		t.Errorf("session epoch %q, want %d: a counter, not a replica's clock", c.Annotations[account.AnnotationSessionEpoch], account.FirstEpoch)
	}
	if c.Spec.WarmPoolRef.Name != DefaultWarmPool {
		t.Errorf("warmPoolRef %q", c.Spec.WarmPoolRef.Name)
	}
	if got := c.Spec.AdditionalPodMetadata.Labels; len(got) != 1 || got[account.PodLabelUser] != "alice" {
		t.Errorf("additionalPodMetadata labels %v", got)
	}
	a, err := account.FromClaim(c)
	if err != nil || !a.TokenMatches(out.Token) {
		t.Errorf("account.FromClaim = %+v, %v", a, err)
	}

	// The cookie is accepted by a verifier that knows only the JWKS.
	pv := e.proxyView(t, in)
	if err := pv.accepts(ck.Value); err != nil {
		t.Errorf("node proxy view refuses the signup cookie: %v", err)
	}

	if n := histogramCount(t, reg, "sandgate_authapi_claim_ready_seconds"); n != 1 {
		t.Errorf("claim create-to-Ready histogram has %d observations, want 1", n)
	}
	if got := testutil.ToFloat64(m.Signups.WithLabelValues("created")); got != 1 {
		t.Errorf("signups created = %v", got)
	}

	resp, body = in.do(t, req{method: "POST", path: "/users", json: `{"user":"alice"}`})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, `"error"`) || cookie(resp, DefaultCookieName) != nil {
		t.Errorf("second signup: %d %s, cookie %v", resp.StatusCode, body, cookie(resp, DefaultCookieName))
	}
}

func TestSignupJSONWhileWakingIs202(t *testing.T) {
	e := newEnv(t)
	e.runCluster(t, 0, controller.Delays{ColdStart: time.Minute}) // no spare, a slow cold start
	in := e.start(t, func(o *Options) { o.WakeTimeout = 300 * time.Millisecond })
	resp, body := in.do(t, req{method: "POST", path: "/users", json: `{"user":"bob"}`})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("signup: %d %s", resp.StatusCode, body)
	}
	var out accountResponse
	mustJSON(t, body, &out)
	if out.State != StateWaking || out.Token == "" || cookie(resp, DefaultCookieName) == nil {
		t.Errorf("answer %+v", out)
	}
}

func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	j := strings.Index(s, end)
	if j < 0 {
		return ""
	}
	return s[:j]
}

func mustHash(t *testing.T, h string) [32]byte {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 32 {
		t.Fatalf("bad hash %q", h)
	}
	return [32]byte(b)
}

func TestSignupRejectionsCreateNothing(t *testing.T) {
	e := newEnv(t)
	in := e.start(t, func(o *Options) {
		o.InviteCode = "let-me-in"
		o.MaxBodyBytes = 1024
		o.WakeTimeout = 100 * time.Millisecond
	})
	invite := map[string]string{"X-Signup-Invite": "let-me-in"}
	long := strings.Repeat("a", account.MaxUserLen+1)
	cases := []struct {
		name string
		rq   req
		code int
		want string
	}{
		{"upper case", req{json: `{"user":"Bob","invite":"let-me-in"}`}, 400, "lowercase"},
		{"reserved", req{json: `{"user":"admin","invite":"let-me-in"}`}, 400, "reserved"},
		{"empty", req{json: `{"invite":"let-me-in"}`}, 400, "empty"},
		{"too long", req{json: `{"user":"` + long + `","invite":"let-me-in"}`}, 400, "longer than"},
		{"underscore", req{form: url.Values{"user": {"a_b"}, "invite": {"let-me-in"}}, header: map[string]string{"Accept": "application/json"}}, 400, "lowercase"},
		{"path", req{json: `{"user":"../bob"}`, header: invite}, 400, "invalid user name"},
		{"not json", req{json: `{"user":`, header: invite}, 400, "JSON"},
		{"number", req{json: `{"user":5}`, header: invite}, 400, "JSON"},
		{"no invite", req{json: `{"user":"erin"}`}, 403, "invite"},
		{"wrong invite", req{json: `{"user":"erin","invite":"let-me-inn"}`}, 403, "invite"},
		{"wrong invite header", req{json: `{"user":"erin"}`, header: map[string]string{"X-Signup-Invite": "nope"}}, 403, "invite"},
		{"too large", req{json: `{"user":"erin","pad":"` + strings.Repeat("x", 2000) + `"}`, header: invite}, 413, "too large"},
		{"too large form", req{form: url.Values{"user": {"erin"}, "pad": {strings.Repeat("x", 2000)}}, header: map[string]string{"Accept": "application/json"}}, 413, "too large"},
		{"text body", req{header: map[string]string{"Content-Type": "text/plain", "X-Signup-Invite": "let-me-in"}}, 415, "form"},
		{"cross origin", req{json: `{"user":"erin","invite":"let-me-in"}`, header: map[string]string{"Origin": "https://evil.example"}}, 403, "cross-origin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.rq.method, tc.rq.path = "POST", "/users"
			resp, body := in.do(t, tc.rq)
			if resp.StatusCode != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s, want %d containing %q", resp.StatusCode, body, tc.code, tc.want)
			}
			if cookie(resp, DefaultCookieName) != nil {
				t.Error("a rejected signup set a session cookie")
			}
		})
	}
	list, err := e.claims.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("rejected signups created %d claims", len(list.Items))
	}
	// The invite in the form, or in the header, admits.
	for i, rq := range []req{
		{json: `{"user":"frank","invite":"let-me-in"}`},
		{json: `{"user":"grace"}`, header: invite},
	} {
		rq.method, rq.path = "POST", "/users"
		if resp, body := in.do(t, rq); resp.StatusCode != http.StatusAccepted {
			t.Errorf("signup %d with invite: %d %s", i, resp.StatusCode, body)
		}
	}
	// A browser gets the refusal as a page.
	resp, body := in.do(t, req{method: "POST", path: "/users", form: url.Values{"user": {"Bad"}}, header: invite})
	if resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "lowercase") {
		t.Errorf("browser refusal: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// histogramCount returns the observations of the histogram name in reg.
func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}
