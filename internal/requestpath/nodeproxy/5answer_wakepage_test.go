package nodeproxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/webpage"
)

// TestWakingMessage: what the waking page says for each state the node
// proxy can know: the informer's route, the wake call's answer and how
// long the page has waited.
func TestWakingMessage(t *testing.T) {
	const timeout = time.Minute
	suspended := informer.Route{State: informer.StateSuspended, Sandbox: "sb"}
	resuming := informer.Route{State: informer.StatePending, Sandbox: "sb"}
	cold := informer.Route{State: informer.StatePending}
	scheduled := informer.Route{State: informer.StatePending, Sandbox: "sb", Node: "node-b"}
	for _, tc := range []struct {
		name    string
		route   informer.Route
		asked   bool
		failure wakeFailure
		waited  time.Duration

		title   string
		refresh int    // 0: the page does not reload
		steps   string // the steps' states, in order
		links   string // the links' texts, in order
		says    []string
		never   []string
	}{
		{name: "asked to wake", route: suspended, asked: true, waited: time.Second,
			title: "Waking your agent", refresh: 3, steps: "done waiting waiting waiting",
			says: []string{"asleep", "asked to wake up", "reloads every 3 seconds", "less than 60 s"}, never: []string{"recreate"}},
		{name: "resuming", route: resuming, asked: true, waited: time.Second,
			title: "Waking your agent", refresh: 3, steps: "done in progress waiting waiting",
			says: []string{"Resuming your workspace"}},
		{name: "pod scheduled, app starting", route: scheduled, asked: true, waited: 2 * time.Second,
			title: "Waking your agent", refresh: 3, steps: "done done done in progress",
			says: []string{"Resuming your workspace"}},
		{name: "cold start", route: cold, waited: time.Second,
			title: "Starting your agent", refresh: 3, steps: "done in progress waiting waiting",
			says: []string{"a sandbox is being prepared"}},
		{name: "resuming past WAKE_TIMEOUT", route: resuming, asked: true, waited: timeout + time.Second,
			title: "Still waking your agent", refresh: 3, steps: "done in progress waiting waiting",
			links: "Try again|Your account|Recreate workspace…",
			says:  []string{"longer than usual (more than 60 s)", "opens your agent by itself", "tell the people who run this service", "last resort", "deletes everything in it"}},
		{name: "cold start past WAKE_TIMEOUT", route: cold, waited: 2 * timeout,
			title: "Still starting your agent", refresh: 3, links: "Try again|Your account|Recreate workspace…", steps: "done in progress waiting waiting",
			says: []string{"longer than usual"}},
		{name: "wake refused: caller not allowed", route: suspended, failure: wakeFailure{kind: refused, status: 403}, waited: time.Second,
			title: "Your agent could not be woken", steps: "failed waiting waiting waiting", links: "Try again|Your account",
			says:  []string{"403 Forbidden", "not allowed to ask for wake-ups", "the people who run this service", "would not help", "does not reload by itself", "Your workspace is kept"},
			never: []string{"asked to wake up", "longer than usual"}},
		{name: "wake refused: no such account", route: suspended, failure: wakeFailure{kind: refused, status: 404}, waited: time.Second,
			title: "Your agent could not be woken", steps: "failed waiting waiting waiting", links: "Try again|Your account",
			says:  []string{"404 Not Found", "found no agent for your account", "account page"},
			never: []string{"workspace is kept"}},
		{name: "wake refused otherwise", route: suspended, failure: wakeFailure{kind: refused, status: 429}, waited: time.Second,
			title: "Your agent could not be woken", steps: "failed waiting waiting waiting", links: "Try again|Your account",
			says: []string{"429 Too Many Requests", "Try again in a moment"}},
		{name: "wake refused past WAKE_TIMEOUT", route: suspended, failure: wakeFailure{kind: refused, status: 403}, waited: 2 * timeout,
			title: "Your agent could not be woken", steps: "failed waiting waiting waiting", links: "Try again|Your account",
			says: []string{"403 Forbidden"}, never: []string{"longer than usual"}},
		{name: "auth API unreachable", route: suspended, failure: wakeFailure{kind: unanswered}, waited: time.Second,
			title: "Your agent could not be woken yet", refresh: 3, steps: "failed waiting waiting waiting", links: "Try again|Your account",
			says: []string{"could not be reached", "tries again by itself in 3 s"}},
		{name: "refused, but another node's wake got it starting", route: resuming, failure: wakeFailure{kind: refused, status: 403}, waited: time.Second,
			title: "Waking your agent", refresh: 3, steps: "done in progress waiting waiting",
			never: []string{"403"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := wakingMessage(wakeView{
				entry: informer.Entry{Route: tc.route}, asked: tc.asked, failure: tc.failure,
				waited: tc.waited, timeout: timeout, refresh: wakePageRefresh,
				here: "/u/alice/page?x=1", account: "/", recreate: "/recreate",
			})
			text := strings.Join(m.Lines, " ")
			var steps, links []string
			for _, s := range m.Steps {
				steps = append(steps, s.State.String())
			}
			for _, l := range m.Links {
				links = append(links, l.Text)
			}
			if m.Title != tc.title || m.Refresh != tc.refresh || strings.Join(steps, " ") != tc.steps || strings.Join(links, "|") != tc.links {
				t.Errorf("title %q, refresh %d, steps %q, links %q; want %q, %d, %q, %q",
					m.Title, m.Refresh, strings.Join(steps, " "), strings.Join(links, "|"), tc.title, tc.refresh, tc.steps, tc.links)
			}
			for _, s := range tc.says {
				if !strings.Contains(text, s) {
					t.Errorf("does not say %q: %s", s, text)
				}
			}
			for _, s := range tc.never {
				if strings.Contains(text, s) {
					t.Errorf("says %q: %s", s, text)
				}
			}
			if m.Alert != (tc.failure.kind != notFailed && tc.route.State == informer.StateSuspended) {
				t.Errorf("alert %v", m.Alert)
			}
			if len(m.Links) > 0 && (m.Links[0].Href != "/u/alice/page?x=1" || m.Links[0].Secondary || m.Links[1].Href != "/") {
				t.Errorf("links %+v: want to try again first, then the account page", m.Links)
			}
			if n := len(m.Links); n == 3 && m.Links[2] != (webpage.Link{Href: "/recreate", Text: "Recreate workspace…", Secondary: true}) {
				t.Errorf("recreate is not the last, quiet link: %+v", m.Links)
			}
		})
	}
}

// refusingAuthAPI stands in for the auth API's internal endpoints: a wake
// is refused with status until accept is set. It counts the wake calls.
type refusingAuthAPI struct {
	status int
	accept atomic.Bool
	wakes  atomic.Int32
}

func (a *refusingAuthAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != DefaultWakePath {
		http.NotFound(w, r)
		return
	}
	a.wakes.Add(1)
	if !a.accept.Load() {
		http.Error(w, `{"error":"caller_forbidden"}`, a.status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"user":"alice","patched":true}`))
}

// TestWakeRefusedPage: a navigation to a suspended agent whose wake the
// auth API refuses gets the refusal (503, Retry-After, no reload), not a
// page saying it was asked to wake. The refusal is asked again only after
// RetryAfter, and once the auth API accepts, the waking page is back.
func TestWakeRefusedPage(t *testing.T) {
	api := &refusingAuthAPI{status: http.StatusForbidden}
	internal := httptest.NewServer(api)
	defer internal.Close()
	ho := wakeOpts(time.Minute, nil)
	wake := ho.modify
	ho.modify = func(o *Options) { wake(o); o.AuthAPIInternal = internal.URL }
	h := newHarness(t, ho)
	h.addUser("alice", "node-a")
	ready := h.suspend("alice")
	nav := navigationHeaders(map[string]string{"Cookie": cookie(h.session("alice"))})

	resp := h.get("node-a", "/u/alice/notes?day=1", nav)
	body := readAll(t, resp)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "<h1>Your agent could not be woken</h1>") ||
		!strings.Contains(body, "403 Forbidden") || strings.Contains(body, `http-equiv="refresh"`) || strings.Contains(body, "asked to wake up") {
		t.Fatalf("refused wake: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	checkProxyPage(t, resp, body)
	for _, want := range []string{`<a class="button" href="/u/alice/notes?day=1">Try again</a>`, `<a class="button secondary" href="/">Your account</a>`,
		`<li class="step-failed">Asked to wake up: <span class="step-state">failed</span></li>`} {
		if !strings.Contains(body, want) {
			t.Errorf("refusal page lacks %s: %s", want, body)
		}
	}
	if strings.Contains(body, `href="/recreate"`) {
		t.Errorf("a refusal that recreating cannot mend offers to recreate: %s", body)
	}
	if n := api.wakes.Load(); n != 1 {
		t.Fatalf("%d wake calls, want 1", n)
	}

	// Try again at once: the same refusal, without asking again.
	resp = h.get("node-a", "/u/alice/notes?day=1", nav)
	if body := readAll(t, resp); resp.StatusCode != 503 || !strings.Contains(body, "403 Forbidden") || api.wakes.Load() != 1 {
		t.Errorf("again within RetryAfter: %d, %d wake calls: %s", resp.StatusCode, api.wakes.Load(), body)
	}
	// Try again after RetryAfter, once the auth API accepts: asked again,
	// and the page says so.
	api.accept.Store(true)
	h.clock.Advance(DefaultRetryAfter)
	resp = h.get("node-a", "/u/alice/notes?day=1", nav)
	body = readAll(t, resp)
	if resp.StatusCode != 503 || !strings.Contains(body, "<h1>Waking your agent</h1>") || !strings.Contains(body, `http-equiv="refresh"`) ||
		!strings.Contains(body, `<li class="step-done">Asked to wake up: <span class="step-state">done</span></li>`) || api.wakes.Load() != 2 {
		t.Errorf("after RetryAfter: %d, %d wake calls: %s", resp.StatusCode, api.wakes.Load(), body)
	}

	h.dir.set("alice", ready)
	if resp := h.get("node-a", "/u/alice/", nav); resp.StatusCode != 200 {
		t.Errorf("once Ready: %d %s", resp.StatusCode, readAll(t, resp))
	}
	if _, f := h.nodes["node-a"].proxy.waker.state("alice", ready.Route.Sandbox); f.kind != notFailed {
		t.Errorf("failure still remembered once Ready: %+v", f)
	}
}

// TestWakeOutagePage: a navigation to a suspended agent while no auth API
// replica answers gets the waking page with what failed, at once, with
// the outage's status and Retry-After, reloading after that long.
func TestWakeOutagePage(t *testing.T) {
	h, svc := outageHarness(t, wakeOpts(time.Minute, nil))
	h.addUser("alice", "node-a")
	h.suspend("alice")
	svc.stop()
	resp := h.get("node-a", "/u/alice/", navigationHeaders(map[string]string{"Cookie": cookie(h.session("alice"))}))
	body := readAll(t, resp)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "2" || !strings.Contains(body, "<h1>Your agent could not be woken yet</h1>") ||
		!strings.Contains(body, `<meta http-equiv="refresh" content="2">`) || !strings.Contains(body, "tries again by itself in 2 s") ||
		!strings.Contains(body, `<li class="step-failed">Asked to wake up`) || !strings.Contains(body, `role="alert"`) {
		t.Errorf("outage: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	checkProxyPage(t, resp, body)
}

// TestWakerForgetsOldestFailures: the failures the waker remembers are
// bounded, however many users fail.
func TestWakerForgetsOldestFailures(t *testing.T) {
	w := newWaker(Options{WakeTimeout: time.Minute, RetryAfter: time.Second, Now: time.Now}, nil, nil, nil)
	for i := range maxWakeFailures + 10 {
		user := fmt.Sprintf("user%d", i)
		w.record(wakeKey(user, ""), user, &wakeRefusedError{status: 403})
	}
	if n := w.failures.Len(); n != maxWakeFailures || w.pending.Load() != maxWakeFailures {
		t.Errorf("%d failures remembered (pending %d), want %d", n, w.pending.Load(), maxWakeFailures)
	}
}
