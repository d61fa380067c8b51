package authapi

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/apidoc"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// runSweeper runs a sweeper over e as replica pod, whose internal
// listener is at addr, until the test ends.
func runSweeper(t *testing.T, e *env, pod, addr string) *sweeper.Sweeper {
	t.Helper()
	sw, err := sweeper.New(sweeper.Options{
		Namespace: e.ns, Sandboxes: e.sb.Sandboxes(e.ns), Claims: e.sb.SandboxClaims(e.ns), Leases: e.kube.CoordinationV1(),
		Identity: sweeper.Identity(pod, addr), IdleTimeout: time.Hour, ReportInterval: time.Minute,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sw.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return sw
}

// adminStart runs a replica whose Activity is a real sweeper over e (its
// Sandbox cache backs the admin views), with ops an admin, and signs up
// ops, alice and bob.
func adminStart(t *testing.T, edit func(*Options)) (e *env, in *instance, tokens map[string]string, cookies map[string]*http.Cookie, audit *logbuf.Buffer, sw *sweeper.Sweeper) {
	t.Helper()
	e = newEnv(t)
	e.warm(t)
	sw = runSweeper(t, e, "authapi-0", "127.0.0.1:1")
	audit = &logbuf.Buffer{}
	in = e.start(t, func(o *Options) {
		o.Activity, o.Admins, o.Audit = sw, []string{"ops"}, slog.New(slog.NewJSONHandler(audit, nil))
		if edit != nil {
			edit(o)
		}
	})
	tokens, cookies = map[string]string{}, map[string]*http.Cookie{}
	for _, u := range []string{"ops", "alice", "bob"} {
		tokens[u], cookies[u] = in.signupJSON(t, u)
	}
	return e, in, tokens, cookies, audit, sw
}

func bearerOf(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok}
}

// pageOf is the header set of a browser opening an admin page of in.
func (in *instance) pageOf(extra map[string]string) map[string]string {
	h := map[string]string{"Accept": "text/html", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Origin": in.http.URL}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

// TestAdminRefusals: every admin route refuses a stranger (401), an
// account that is no admin by token or page (403), an admin's cookie on a
// script's fetch or a frame (403: an agent's script shares the origin), a
// form post without this session's form token or from another site
// (403), and groups from anyone but the SSO proxy asserting that very
// user; each refusal changes nothing.
func TestAdminRefusals(t *testing.T) {
	e, in, tokens, cookies, _, _ := adminStart(t, func(o *Options) {
		o.AuthProxyHeader, o.AdminGroups = "X-Forwarded-User", []string{"staff-ops"}
	})
	_, rootPage := in.do(t, req{method: "GET", path: "/admin/accounts/ops", cookies: []*http.Cookie{cookies["ops"]}, header: in.pageOf(nil)})
	formToken := regexp.MustCompile(`name="form_token" value="([^"]+)"`).FindStringSubmatch(rootPage)
	if formToken == nil {
		t.Fatalf("the admin's account page has no form token:\n%s", rootPage)
	}
	bobBefore, err := e.claims.Get(t.Context(), "dsh-bob", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fetch := map[string]string{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty", "Origin": in.http.URL}
	frame := in.pageOf(map[string]string{"Sec-Fetch-Dest": "iframe"})
	routes := []struct{ method, path string }{
		{"GET", "/admin/accounts"}, {"GET", "/admin/accounts/bob"},
		{"POST", "/admin/accounts/bob/suspend"}, {"POST", "/admin/accounts/bob/wake"}, {"POST", "/admin/accounts/bob/logout"},
		{"POST", "/admin/accounts/bob/rotate"}, {"POST", "/admin/accounts/bob/recreate"}, {"POST", "/admin/accounts/bob/delete"},
		{"POST", "/admin/accounts/bob/budget"},
	}
	for _, tc := range []struct {
		name    string
		header  map[string]string
		cookie  *http.Cookie
		form    url.Values
		want    int
		posting bool // only for POST routes
	}{
		{name: "no credentials", want: http.StatusUnauthorized},
		{name: "a wrong token", header: bearerOf("not-a-token"), want: http.StatusUnauthorized},
		{name: "alice's token", header: bearerOf(tokens["alice"]), want: http.StatusForbidden},
		{name: "alice's page", cookie: cookies["alice"], header: in.pageOf(nil), want: http.StatusForbidden},
		{name: "alice claiming a group herself", cookie: cookies["alice"], header: in.pageOf(map[string]string{"X-Forwarded-Groups": "staff-ops"}), want: http.StatusForbidden},
		{name: "alice in a group asserted for another user", cookie: cookies["alice"],
			header: in.pageOf(map[string]string{"X-Forwarded-User": "ops", "X-Forwarded-Groups": "staff-ops"}), want: http.StatusForbidden},
		{name: "the admin's cookie on a script's fetch", cookie: cookies["ops"], header: fetch, want: http.StatusForbidden},
		{name: "the admin's cookie in a frame", cookie: cookies["ops"], header: frame, want: http.StatusForbidden},
		{name: "the admin's form without its token", cookie: cookies["ops"], header: in.pageOf(nil), form: url.Values{"confirm": {"bob"}}, want: http.StatusForbidden, posting: true},
		{name: "the admin's form with alice's token", cookie: cookies["ops"], header: in.pageOf(nil), want: http.StatusForbidden, posting: true,
			form: url.Values{"confirm": {"bob"}, "form_token": {adminFormFor(t, in, "alice", cookies["alice"])}}},
		{name: "the admin's form from another site", cookie: cookies["ops"], header: in.pageOf(map[string]string{"Origin": "https://evil.example"}),
			form: url.Values{"confirm": {"bob"}, "form_token": {formToken[1]}}, want: http.StatusForbidden, posting: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, rt := range routes {
				if tc.posting && rt.method != "POST" {
					continue
				}
				rq := req{method: rt.method, path: rt.path, header: tc.header, form: tc.form}
				if tc.cookie != nil {
					rq.cookies = []*http.Cookie{tc.cookie}
				}
				resp, body := in.do(t, rq)
				if resp.StatusCode != tc.want {
					t.Errorf("%s %s = %d %.200s, want %d", rt.method, rt.path, resp.StatusCode, body, tc.want)
				}
				adminDocLists(t, rt.method, rt.path, resp.StatusCode)
			}
		})
	}
	c, err := e.claims.Get(t.Context(), "dsh-bob", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("bob's claim after the refusals: %v", err)
	}
	if !maps.Equal(c.Annotations, bobBefore.Annotations) || c.UID != bobBefore.UID {
		t.Errorf("a refusal changed bob's account: %v, was %v", c.Annotations, bobBefore.Annotations)
	}
	if resp, _ := in.do(t, req{method: "GET", path: "/admin/accounts/bob", header: bearerOf(tokens["ops"])}); resp.StatusCode != http.StatusOK {
		t.Errorf("the admin's own token: %d", resp.StatusCode)
	}
	ssoAdmin := in.pageOf(map[string]string{"X-Forwarded-User": "alice", "X-Forwarded-Groups": "staff, staff-ops"})
	if resp, body := in.do(t, req{method: "GET", path: "/admin/accounts", cookies: []*http.Cookie{cookies["alice"]}, header: ssoAdmin}); resp.StatusCode != http.StatusOK {
		t.Errorf("alice in the ops group, as the SSO proxy asserts: %d %.300s", resp.StatusCode, body)
	}
	for _, bad := range []string{"/admin/accounts/Bob", "/admin/accounts/nobody"} {
		if resp, _ := in.do(t, req{method: "GET", path: bad, header: bearerOf(tokens["ops"])}); resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 400 or 404", bad, resp.StatusCode)
		}
	}
}

// adminFormFor is the form token of user's session ck, as the server
// would compute it: a token that is valid, but for another session.
func adminFormFor(t *testing.T, in *instance, user string, ck *http.Cookie) string {
	t.Helper()
	c, err := in.srv.verifier.VerifyIgnoringExpiry(ck.Value)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := in.srv.adminFormToken(user, c.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func mustAccount(t *testing.T, c *extensions.SandboxClaim) account.Account {
	t.Helper()
	a, err := account.FromClaim(c)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// adminJSON sends an admin API request with root's token and decodes the
// answer into v, failing unless it is want and docs/api.md lists it.
func adminJSON(t *testing.T, in *instance, token, method, path, body string, want int, v any) {
	t.Helper()
	resp, got := in.do(t, req{method: method, path: path, json: body, header: bearerOf(token)})
	if resp.StatusCode != want {
		t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, got, want)
	}
	adminDocLists(t, method, path, resp.StatusCode)
	if v != nil {
		mustJSON(t, got, v)
	}
}

// TestAdminAPI: the list pages and filters from the caches; each action
// does what it says on the account in the path only, answers the API and
// writes one audit event naming the admin, which the account's view lists.
func TestAdminAPI(t *testing.T) {
	e, in, tokens, cookies, audit, sw := adminStart(t, nil)
	root := tokens["ops"]
	var page accountPage
	adminJSON(t, in, root, "GET", "/admin/accounts", "", http.StatusOK, &page)
	if page.Total != 3 || len(page.Accounts) != 3 || page.Accounts[0].User != "alice" || page.Accounts[2].User != "ops" {
		t.Fatalf("list: %+v", page)
	}
	testkit.Eventually(t, "every account Ready on a node, from the Sandbox cache", func() bool {
		adminJSON(t, in, root, "GET", "/admin/accounts", "", http.StatusOK, &page)
		for _, a := range page.Accounts {
			if a.State != StateReady || a.Node == "" || a.Sandbox == "" || a.Activity == nil {
				return false
			}
		}
		return page.States[StateReady] == 3
	})
	now := time.Now()
	report := activity.Report{Node: "node-a", SentAt: now.UnixMilli(), Entries: []activity.Entry{{
		Namespace: e.ns, Sandbox: page.Accounts[0].Sandbox, LastActivity: now.Add(-time.Minute).UnixMilli(),
		ModelTokens: 777, ModelTokensDay: now.Unix() / 86400,
	}}}
	testkit.Eventually(t, "the leader takes a report", func() bool { return sw.Observe(report) == nil })
	var alice adminAccountAnswer
	adminJSON(t, in, root, "GET", "/admin/accounts/alice", "", http.StatusOK, &alice)
	if alice.ModelTokensToday == nil || *alice.ModelTokensToday != 777 || alice.Activity == nil || !alice.Activity.Exact ||
		alice.Activity.LastActive == nil || alice.Activity.Source == "" {
		t.Errorf("alice on the leader after a report: tokens %d, activity %+v", deref(alice.ModelTokensToday), alice.Activity)
	}
	for _, tc := range []struct {
		query string
		want  []string
		total int
	}{
		{"?q=li", []string{"alice"}, 1},
		{"?state=suspended", []string{}, 0},
		{"?per_page=1&page=2", []string{"bob"}, 3},
		{"?per_page=2&page=9", []string{}, 3},
	} {
		adminJSON(t, in, root, "GET", "/admin/accounts"+tc.query, "", http.StatusOK, &page)
		var got []string
		for _, a := range page.Accounts {
			got = append(got, a.User)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") || page.Total != tc.total {
			t.Errorf("list%s = %v of %d, want %v of %d", tc.query, got, page.Total, tc.want, tc.total)
		}
	}
	for _, bad := range []string{"?state=asleep", "?page=0", "?per_page=x"} {
		adminJSON(t, in, root, "GET", "/admin/accounts"+bad, "", http.StatusBadRequest, nil)
	}

	mode := func(user string) agents.OperatingMode {
		t.Helper()
		c, err := e.claims.Get(t.Context(), "dsh-"+user, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sb, err := e.sb.Sandboxes(e.ns).Get(t.Context(), c.Status.Sandbox.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sb.Spec.OperatingMode
	}
	var res adminResult
	adminJSON(t, in, root, "POST", "/admin/accounts/alice/suspend", "", http.StatusOK, &res)
	if res.User != "alice" || mode("alice") != agents.OperatingModeSuspended || mode("bob") != agents.OperatingModeRunning {
		t.Fatalf("suspend: %+v, alice %s, bob %s", res, mode("alice"), mode("bob"))
	}
	testkit.Eventually(t, "alice listed Suspended", func() bool {
		adminJSON(t, in, root, "GET", "/admin/accounts?state=Suspended", "", http.StatusOK, &page)
		return page.Total == 1 && page.Accounts[0].User == "alice"
	})
	adminJSON(t, in, root, "POST", "/admin/accounts/alice/wake", "", http.StatusOK, &res)
	if mode("alice") != agents.OperatingModeRunning {
		t.Fatalf("wake left alice %s", mode("alice"))
	}

	for _, bad := range []string{`{}`, `{"tokens_per_day":"5k"}`, `{"tokens_per_day":"-1"}`} {
		adminJSON(t, in, root, "POST", "/admin/accounts/alice/budget", bad, http.StatusBadRequest, nil)
	}
	budget := func() string {
		t.Helper()
		c, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Annotations[account.AnnotationEgressTokensPerDay]
	}
	adminJSON(t, in, root, "POST", "/admin/accounts/alice/budget", `{"tokens_per_day":"50000"}`, http.StatusOK, &res)
	var row adminAccountAnswer
	adminJSON(t, in, root, "GET", "/admin/accounts/alice", "", http.StatusOK, &row)
	if budget() != "50000" || row.EgressTokensPerDay == nil || *row.EgressTokensPerDay != 50000 {
		t.Fatalf("budget 50000: annotation %q, row %v", budget(), row.EgressTokensPerDay)
	}
	for _, tc := range []struct{ perDay, shown string }{{"50000", "50000 (set by an admin)"}, {"0", "no limit (set by an admin)"}} {
		adminJSON(t, in, root, "POST", "/admin/accounts/alice/budget", `{"tokens_per_day":"`+tc.perDay+`"}`, http.StatusOK, &res)
		for _, path := range []string{"/admin/accounts/alice", "/admin/accounts"} {
			resp, body := in.do(t, req{method: "GET", path: path, cookies: []*http.Cookie{cookies["ops"]}, header: in.pageOf(nil)})
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, strings.TrimSuffix(tc.shown, " (set by an admin)")) ||
				path == "/admin/accounts/alice" && !strings.Contains(body, tc.shown) {
				t.Errorf("%s with a budget of %s: %d, want %q shown:\n%.3000s", path, tc.perDay, resp.StatusCode, tc.shown, body)
			}
		}
	}
	adminJSON(t, in, root, "POST", "/admin/accounts/alice/budget", `{"tokens_per_day":"default"}`, http.StatusOK, &res)
	if budget() != "" {
		t.Fatalf("budget default left %q", budget())
	}

	adminJSON(t, in, root, "POST", "/admin/accounts/alice/logout", "", http.StatusOK, &res)
	if resp, _ := in.do(t, req{method: "GET", path: "/", cookies: []*http.Cookie{cookies["alice"]}}); cookie(resp, DefaultCookieName) == nil {
		t.Error("alice's session still opens her account page after sign-out everywhere")
	}

	adminJSON(t, in, root, "POST", "/admin/accounts/alice/rotate", "", http.StatusOK, &res)
	if res.Token == "" || res.Token == tokens["alice"] {
		t.Fatalf("rotate gave no new token: %+v", res)
	}
	login := func(user, token string) int {
		resp, _ := in.do(t, req{method: "POST", path: "/login", json: `{"user":"` + user + `","token":"` + token + `"}`})
		return resp.StatusCode
	}
	if login("alice", tokens["alice"]) != http.StatusUnauthorized || login("alice", res.Token) != http.StatusOK {
		t.Error("after rotation the old token must fail and the new one sign in")
	}

	before, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	adminJSON(t, in, root, "POST", "/admin/accounts/alice/recreate", `{}`, http.StatusBadRequest, nil)
	adminJSON(t, in, root, "POST", "/admin/accounts/alice/recreate", `{"confirm":"bob"}`, http.StatusBadRequest, nil)
	adminJSON(t, in, root, "POST", "/admin/accounts/alice/recreate", `{"confirm":"alice"}`, http.StatusOK, &res)
	after, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil || after.UID == before.UID || mustAccount(t, after).TokenHash != account.HashToken(res.Token) {
		t.Fatalf("recreate: claim %v (err %v), token hash matches %v", after.UID, err, err == nil && mustAccount(t, after).TokenHash == account.HashToken(res.Token))
	}

	adminJSON(t, in, root, "POST", "/admin/accounts/bob/delete", `{"confirm":"alice"}`, http.StatusBadRequest, nil)
	adminJSON(t, in, root, "POST", "/admin/accounts/bob/delete", `{"confirm":"bob"}`, http.StatusOK, &res)
	if _, err := e.claims.Get(t.Context(), "dsh-bob", metav1.GetOptions{}); err == nil {
		c, _ := e.claims.Get(t.Context(), "dsh-bob", metav1.GetOptions{})
		if c.DeletionTimestamp == nil {
			t.Error("bob's claim is still there after delete")
		}
	}
	adminJSON(t, in, root, "POST", "/admin/accounts/bob/suspend", "", http.StatusNotFound, nil)

	var view adminAccountAnswer
	adminJSON(t, in, root, "GET", "/admin/accounts/alice", "", http.StatusOK, &view)
	var actions []string
	for _, ev := range view.Events {
		if ev.Admin == "ops" {
			actions = append(actions, ev.Action)
		}
	}
	if want := "recreate,recreate,recreate,token_rotate,logout_everywhere,egress_budget,egress_budget,egress_budget,egress_budget,egress_budget,egress_budget,egress_budget,wake,suspend_now"; strings.Join(actions, ",") != want {
		t.Errorf("alice's recent events by ops: %v, want %s", actions, want)
	}
	var byAdmin []string
	for _, line := range auditLines(t, audit) {
		if line["admin"] == "ops" {
			byAdmin = append(byAdmin, line["user"].(string)+":"+line["action"].(string)+":"+line["outcome"].(string))
		}
	}
	want := []string{"alice:suspend_now:ok", "alice:wake:ok", "alice:egress_budget:bad_request", "alice:egress_budget:bad_request",
		"alice:egress_budget:bad_request", "alice:egress_budget:ok", "alice:egress_budget:ok", "alice:egress_budget:ok", "alice:egress_budget:ok",
		"alice:logout_everywhere:ok", "alice:token_rotate:ok",
		"alice:recreate:not_confirmed", "alice:recreate:not_confirmed", "alice:recreate:ok",
		"bob:delete:not_confirmed", "bob:delete:ok", "bob:suspend_now:no_account"}
	if strings.Join(byAdmin, " ") != strings.Join(want, " ") {
		t.Errorf("audit events naming the admin:\n got %v\nwant %v", byAdmin, want)
	}
	for _, secret := range []string{root, res.Token, tokens["alice"]} {
		if strings.Contains(audit.String(), secret) {
			t.Error("a token is in the audit stream")
		}
	}
}

func deref(n *int64) any {
	if n == nil {
		return nil
	}
	return *n
}

// adminDocLists fails unless docs/api.md's row of the admin endpoint that
// path is lists code.
func adminDocLists(t *testing.T, method, path string, code int) {
	t.Helper()
	doc, err := apidoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	path, _, _ = strings.Cut(path, "?")
	parts := strings.Split(strings.TrimPrefix(path, "/admin/accounts"), "/")
	endpoint := method + " /admin/accounts"
	switch len(parts) {
	case 2:
		endpoint += "/<user>"
	case 3:
		endpoint += "/<user>/<action>"
	}
	if err := doc.Lists(endpoint, code); err != nil {
		t.Error(err)
	}
}

// TestAdminFactsFromTheLeader: with two replicas, the one that does not
// lead the sweep asks the leader for what only it knows (last activity,
// today's model tokens, the idle rule's view on the owner's account page),
// with a token only replicas can sign; the leader refuses anyone else.
func TestAdminFactsFromTheLeader(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	var ins [2]*instance
	var sws [2]*sweeper.Sweeper
	for i := range ins {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		sws[i] = runSweeper(t, e, fmt.Sprintf("authapi-%d", i), ln.Addr().String())
		ins[i] = e.startOn(t, ln, func(o *Options) { o.Activity, o.Admins = sws[i], []string{"ops"} })
	}
	ops, _ := ins[0].signupJSON(t, "ops")
	_, aliceCookie := ins[0].signupJSON(t, "alice")
	leader := -1
	testkit.Eventually(t, "a leader", func() bool {
		for i, sw := range sws {
			if sw.Leading() {
				leader = i
			}
		}
		return leader >= 0
	})
	other := ins[1-leader]
	var row adminAccountAnswer
	testkit.Eventually(t, "alice's sandbox in the other replica's cache", func() bool {
		adminJSON(t, other, ops, "GET", "/admin/accounts/alice", "", http.StatusOK, &row)
		return row.Sandbox != ""
	})
	now := time.Now()
	report := activity.Report{Node: "node-a", SentAt: now.UnixMilli(), Entries: []activity.Entry{{
		Namespace: e.ns, Sandbox: row.Sandbox, LastActivity: now.UnixMilli(), ModelTokens: 4321, ModelTokensDay: now.Unix() / 86400,
	}}}
	if err := sws[leader].Observe(report); err != nil {
		t.Fatal(err)
	}
	adminJSON(t, other, ops, "GET", "/admin/accounts/alice", "", http.StatusOK, &row)
	if row.ModelTokensToday == nil || *row.ModelTokensToday != 4321 || row.Activity == nil || !row.Activity.Exact {
		t.Errorf("alice on the replica that does not lead: tokens %v, activity %+v; want the leader's 4321, exact", deref(row.ModelTokensToday), row.Activity)
	}
	if resp, body := other.do(t, req{method: "GET", path: "/", cookies: []*http.Cookie{aliceCookie}}); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, "<dt>Last active</dt>") || strings.Contains(body, "did not answer") {
		t.Errorf("alice's account page on the replica that does not lead: %d, want the leader's last use:\n%.3000s", resp.StatusCode, body)
	}
	var page accountPage
	adminJSON(t, other, ops, "GET", "/admin/accounts?q=alice", "", http.StatusOK, &page)
	if len(page.Accounts) != 1 || deref(page.Accounts[0].ModelTokensToday) != int64(4321) {
		t.Errorf("the list on the replica that does not lead: %+v", page.Accounts)
	}
	for _, tc := range []struct {
		name, auth string
	}{{"no token", ""}, {"a session token", "Bearer " + aliceCookie.Value}, {"an admin's bearer token", "Bearer " + ops}} {
		resp, body := ins[leader].do(t, req{method: "POST", path: accountFactsPath, json: `{"users":["alice"]}`, header: map[string]string{"Authorization": tc.auth}})
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "4321") {
			t.Errorf("account facts with %s: %d %s, want 401", tc.name, resp.StatusCode, body)
		}
	}
}
