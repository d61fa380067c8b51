package authapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestKeepAwakeAndSuspendNow: the owner keeps their agent awake for
// KEEP_AWAKE (the claim's annotation, which the idle rule reads) and
// suspends it at once, by bearer token or by the account page's form with
// the cookie; another user's token, a cross-site form and a stranger are
// refused, and change nothing.
func TestKeepAwakeAndSuspendNow(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	now := time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)
	in := e.start(t, func(o *Options) { o.KeepAwake, o.Now = 45*time.Minute, func() time.Time { return now } })
	token, ck := in.signupJSON(t, "alice")
	bobToken, _ := in.signupJSON(t, "bob")
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	keepAwake := func() string {
		t.Helper()
		c, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Annotations[account.AnnotationKeepAwakeUntil]
	}

	for _, tc := range []struct {
		name string
		rq   req
		want int
	}{
		{"bob's token on alice", req{method: "POST", path: "/users/alice/keep-awake", header: bearer(bobToken)}, http.StatusUnauthorized},
		{"cross-site form", req{method: "POST", path: "/users/alice/keep-awake", cookies: []*http.Cookie{ck}, header: map[string]string{"Origin": "https://evil.example"}}, http.StatusForbidden},
		{"no credentials", req{method: "POST", path: "/users/alice/suspend"}, http.StatusUnauthorized},
		{"bob's token, suspend", req{method: "POST", path: "/users/alice/suspend", header: bearer(bobToken)}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if resp, body := in.do(t, tc.rq); resp.StatusCode != tc.want {
				t.Errorf("%s %s = %d %s, want %d", tc.rq.method, tc.rq.path, resp.StatusCode, body, tc.want)
			}
		})
	}
	if got := keepAwake(); got != "" {
		t.Fatalf("refused requests set keep-awake %q", got)
	}

	resp, body := in.do(t, req{method: "POST", path: "/users/alice/keep-awake", header: bearer(token)})
	want := now.Add(45 * time.Minute).Format(time.RFC3339)
	if resp.StatusCode != http.StatusOK || keepAwake() != want {
		t.Fatalf("keep awake = %d %s, annotation %q; want 200 and %s", resp.StatusCode, body, keepAwake(), want)
	}
	now = now.Add(10 * time.Minute)
	resp, body = in.do(t, req{method: "POST", path: "/users/alice/keep-awake", cookies: []*http.Cookie{ck}, header: in.origin(),
		form: map[string][]string{}})
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusOK {
		t.Fatalf("keep awake by the page's form = %d %s", resp.StatusCode, body)
	}
	if want := now.Add(45 * time.Minute).Format(time.RFC3339); keepAwake() != want {
		t.Fatalf("pressed again: keep-awake %q, want it afresh, %s", keepAwake(), want)
	}

	resp, body = in.do(t, req{method: "POST", path: "/users/alice/suspend", header: bearer(token)})
	if resp.StatusCode != http.StatusOK || keepAwake() != "" {
		t.Fatalf("suspend now = %d %s, keep-awake %q; want 200 and none", resp.StatusCode, body, keepAwake())
	}
	c, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "alice's sandbox suspended", func() bool {
		sb, err := e.sb.Sandboxes(e.ns).Get(t.Context(), sandboxOf(c), metav1.GetOptions{})
		return err == nil && sb.Spec.OperatingMode == agents.OperatingModeSuspended
	})
	bob, err := e.claims.Get(t.Context(), "dsh-bob", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sb, err := e.sb.Sandboxes(e.ns).Get(t.Context(), sandboxOf(bob), metav1.GetOptions{}); err != nil || sb.Spec.OperatingMode == agents.OperatingModeSuspended {
		t.Errorf("bob's sandbox: %v %v, want it running", err, sb.Spec.OperatingMode)
	}
}

// TestWakeSchedule: the owner sets a wake schedule (a time of day in UTC,
// once, daily or on weekdays), which the claim keeps and the account page
// shows, and clears it; bad times and repeats are refused with 400.
func TestWakeSchedule(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	now := time.Date(2026, 12, 11, 9, 0, 0, 0, time.UTC) // a Friday
	in := e.start(t, func(o *Options) { o.Now = func() time.Time { return now } })
	token, ck := in.signupJSON(t, "alice")
	bearer := map[string]string{"Authorization": "Bearer " + token}
	schedule := func() string {
		t.Helper()
		c, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Annotations[account.AnnotationWakeSchedule]
	}
	for _, tc := range []struct{ json, want string }{
		{`{"at":"08:30","repeat":"weekdays"}`, "weekdays 08:30"},
		{`{"at":"07:15","repeat":"daily"}`, "daily 07:15"},
		{`{"at":"08:30","repeat":"once"}`, "once 2026-12-12T08:30Z"},
		{`{"at":"10:00","repeat":"once"}`, "once 2026-12-11T10:00Z"},
	} {
		if resp, body := in.do(t, req{method: "POST", path: "/users/alice/wake-schedule", json: tc.json, header: bearer}); resp.StatusCode != http.StatusOK || schedule() != tc.want {
			t.Errorf("%s = %d %s, schedule %q; want %q", tc.json, resp.StatusCode, body, schedule(), tc.want)
		}
	}
	for _, bad := range []string{`{"at":"25:00","repeat":"daily"}`, `{"at":"8am","repeat":"daily"}`, `{"at":"08:30","repeat":"hourly"}`, `{"repeat":"daily"}`} {
		if resp, body := in.do(t, req{method: "POST", path: "/users/alice/wake-schedule", json: bad, header: bearer}); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s = %d %s, want 400", bad, resp.StatusCode, body)
		}
	}
	if got := schedule(); got != "once 2026-12-11T10:00Z" {
		t.Fatalf("refused schedules changed it to %q", got)
	}
	resp, page := in.do(t, req{method: "GET", path: "/", cookies: []*http.Cookie{ck}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "<dt>Wakes</dt><dd>once; next 2026-12-11 10:00 UTC (1 h from now)</dd>") ||
		!strings.Contains(page, `<option value="once" selected>`) || !strings.Contains(page, `value="10:00"`) {
		t.Fatalf("account page does not show the schedule: %d\n%s", resp.StatusCode, page)
	}
	resp, body := in.do(t, req{method: "POST", path: "/users/alice/wake-schedule", cookies: []*http.Cookie{ck}, header: in.origin(),
		form: map[string][]string{"repeat": {"never"}}})
	if resp.StatusCode != http.StatusSeeOther || schedule() != "" {
		t.Fatalf("clear by the page's form = %d %s, schedule %q", resp.StatusCode, body, schedule())
	}
}
