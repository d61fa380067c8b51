package clusterjourney

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/clusterinstall"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// The agent-sandbox releases the stand-in behaves as
// (cmd/sandbox-controller-standin --release).
const (
	releaseV1  = "v1.0.13"
	releaseV05 = "v0.5.6"
)

// outage is how long the controller stays down: as long as the auth API
// and the node proxies hold a request for a sandbox (WAKE_TIMEOUT), so
// every held request runs out while it is down.
const outage = 60 * time.Second

// control sends a control request to `sandgate-cluster up`
// (--control-socket) and fails unless it answers 2xx.
func (j *journey) control(method, path string) string {
	j.t.Helper()
	if j.e.ControlSocket == "" {
		j.t.Fatal("sandgate-cluster up listens on no control socket")
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", j.e.ControlSocket)
		}}}
	req, err := http.NewRequest(method, "http://sandgate-cluster"+path, nil)
	if err != nil {
		j.t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		j.t.Fatalf("control %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		j.t.Fatalf("control %s %s: %d %s", method, path, resp.StatusCode, body)
	}
	return strings.TrimSpace(string(body))
}

// stopController ends the controller stand-in as a rolling Deployment
// does (SIGTERM) and returns when it has exited.
func (j *journey) stopController() time.Time {
	j.t.Helper()
	start := time.Now()
	j.control(http.MethodPost, "/sandbox-controller/stop")
	j.t.Logf("agent-sandbox controller stand-in ended (SIGTERM) in %s", time.Since(start).Round(time.Millisecond))
	return time.Now()
}

// startController starts the stand-in as release and says which release
// runs.
func (j *journey) startController(release string) time.Time {
	j.t.Helper()
	j.control(http.MethodPost, "/sandbox-controller/start?release="+url.QueryEscape(release))
	back := time.Now()
	var st struct {
		Running bool
		Release string
	}
	if err := json.Unmarshal([]byte(j.control(http.MethodGet, "/sandbox-controller")), &st); err != nil || !st.Running || st.Release != release {
		j.t.Fatalf("the controller stand-in after a start as %q: %+v %v", release, st, err)
	}
	j.t.Logf("agent-sandbox controller stand-in started again as %s", release)
	return back
}

// podNameAnnotation is a Sandbox's agents.x-k8s.io/pod-name annotation,
// which v0.5.6 writes and v1.0.13 never does.
func (j *journey) podNameAnnotation(sandbox string) string {
	j.t.Helper()
	v, err := j.kubectl("-n", clusterinstall.SandboxNamespace, "get", "sandbox", sandbox,
		"-o", "jsonpath={.metadata.annotations.agents\\.x-k8s\\.io/pod-name}")
	if err != nil {
		j.t.Fatalf("read sandbox %s: %v %s", sandbox, err, v)
	}
	return v
}

// expectRelease fails unless a's adopted Sandbox shows the release the
// controller runs as: the pod-name annotation (its pod is named after it)
// under v0.5.6, none under v1.0.13.
func (j *journey) expectRelease(a account, release string) {
	j.t.Helper()
	want := map[string]string{releaseV1: "", releaseV05: a.sandbox}[release]
	if got := j.podNameAnnotation(a.sandbox); got != want {
		j.t.Fatalf("%s's Sandbox %s has pod-name annotation %q; %s writes %q", a.user, a.sandbox, got, release, want)
	}
	j.t.Logf("%s's Sandbox %s: pod-name annotation %q, as %s writes it", a.user, a.sandbox, want, release)
}

// switchRelease replaces the controller with one of release, as an
// operator's upgrade or downgrade does, and waits until a's Sandbox shows
// it.
func (j *journey) switchRelease(a account, release string) {
	j.t.Helper()
	// A request first: a is then neither suspended nor idle while the
	// controller changes.
	resp, body := j.do(0, http.MethodGet, "/u/"+a.user+"/api/messages", "", a.api(j, 0, ""))
	j.expect(resp, body, http.StatusOK, a.user+"'s agent before the controller changes")
	j.stopController()
	j.startController(release)
	want := map[string]string{releaseV1: "", releaseV05: a.sandbox}[release]
	testkit.Within(j.t, 2*time.Minute, a.user+"'s Sandbox reconciled by "+release, func() bool {
		return j.podNameAnnotation(a.sandbox) == want
	})
	j.t.Logf("%s's Sandbox %s now carries pod-name annotation %q: the controller runs as %s", a.user, a.sandbox, want, release)
}

// controllerDown ends the controller for the outage while users sign up
// (one through the API, one in a browser), suspended's agent is woken and
// running's agent is used on every node, and checks what each sees; then
// it starts the controller again and checks that nothing was lost. It
// returns the two new accounts.
func (j *journey) controllerDown(running, suspended account, text map[string]string) []account {
	j.t.Helper()
	nodes := make([]int, len(j.e.Nodes))
	for i := range nodes {
		nodes[i] = i
	}
	stopped := j.stopController()

	// What needs a held request runs beside the rest: the API signup and
	// the API call to the suspended agent are each held WAKE_TIMEOUT.
	type held struct {
		resp *http.Response
		body string
		err  error
		took time.Duration
	}
	var wg sync.WaitGroup
	var apiSignup, apiWake held
	dave := account{user: "dave"}
	wg.Add(2)
	go func() {
		defer wg.Done()
		start := time.Now()
		apiSignup.resp, apiSignup.body, apiSignup.err = j.send(0, http.MethodPost, "/users", `{"user":"dave"}`, map[string]string{
			"Content-Type": "application/json", "Accept": "application/json", "Origin": j.origin(0)})
		apiSignup.took = time.Since(start)
	}()
	go func() {
		defer wg.Done()
		start := time.Now()
		apiWake.resp, apiWake.body, apiWake.err = j.send(1, http.MethodGet, "/u/"+suspended.user+"/api/messages", "", suspended.api(j, 1, ""))
		apiWake.took = time.Since(start)
	}()
	heldDone := make(chan struct{})
	go func() { wg.Wait(); close(heldDone) }()

	erin := j.browserSignup(1, "erin")
	j.t.Logf("during the outage: erin's browser signup got its 303 and the token view (200) with the link to her agent")

	// A browser on the waking page reloads it every Retry-After seconds;
	// so does this loop, while running's agent is used on every node.
	served, pages := 0, map[string]string{}
	over := func() bool {
		select {
		case <-heldDone:
			return time.Since(stopped) >= outage
		default:
			return false
		}
	}
	for round := 0; !over(); round++ {
		if round > 0 {
			time.Sleep(3 * time.Second)
		}
		for _, i := range nodes {
			resp, body := j.do(i, http.MethodGet, "/u/"+running.user+"/api/messages", "", running.api(j, i, ""))
			j.expect(resp, body, http.StatusOK, running.user+"'s running agent on "+j.e.Nodes[i]+" while the controller is down")
			if !strings.Contains(body, text[running.user]) {
				j.t.Fatalf("%s's messages on %s lack %q while the controller is down: %.300s", running.user, j.e.Nodes[i], text[running.user], body)
			}
			served++
			for _, a := range []account{suspended, erin} {
				title := j.expectWakingPage(i, a, "while the controller is down")
				pages[a.user+" on "+j.e.Nodes[i]] = title
			}
		}
		if round == 0 {
			// The auth API patched the wake at once; no pod can start.
			testkit.Within(j.t, 10*time.Second, suspended.user+"'s Sandbox patched Running by the wake", func() bool {
				return j.sandboxMode(suspended) == "Running"
			})
			j.t.Logf("during the outage: %s's Sandbox has spec.operatingMode Running (the wake was accepted and patched)", suspended.user)
		}
	}
	down := time.Since(stopped)
	j.t.Logf("during the outage: %s's running agent answered all %d requests (200, messages intact) on %v", running.user, served, j.e.Nodes)
	for who, title := range pages {
		j.t.Logf("during the outage: %s: every navigation got 503, Retry-After and the waking page %q, which reloads itself", who, title)
	}
	if apiSignup.err != nil {
		j.t.Fatalf("dave's API signup while the controller is down: %v", apiSignup.err)
	}
	j.expect(apiSignup.resp, apiSignup.body, http.StatusAccepted, "dave's API signup while the controller is down")
	var out struct{ Token, State string }
	if err := json.Unmarshal([]byte(apiSignup.body), &out); err != nil || out.State != "Waking" || out.Token == "" {
		j.t.Fatalf("dave's signup answer %q: %v", apiSignup.body, err)
	}
	dave.token, dave.cookie = out.Token, sessionCookie(apiSignup.resp)
	j.t.Logf("during the outage: dave's API signup answered 202, state %s, after %s", out.State, apiSignup.took.Round(time.Millisecond))
	if apiWake.err != nil {
		j.t.Fatalf("%s's API call while the controller is down: %v", suspended.user, apiWake.err)
	}
	if apiWake.resp.StatusCode != http.StatusServiceUnavailable || apiWake.resp.Header.Get("Retry-After") == "" {
		j.t.Fatalf("%s's API call while the controller is down: %d (Retry-After %q), want 503 with Retry-After: %.300s",
			suspended.user, apiWake.resp.StatusCode, apiWake.resp.Header.Get("Retry-After"), apiWake.body)
	}
	j.t.Logf("during the outage: %s's API call was held %s, then 503 Retry-After %s: %.120s", suspended.user,
		apiWake.took.Round(time.Millisecond), apiWake.resp.Header.Get("Retry-After"), strings.TrimSpace(apiWake.body))

	back := j.startController("")
	j.t.Logf("the controller was down for %s", down.Round(time.Millisecond))
	pending := []account{dave, erin, suspended}
	what := map[string]string{dave.user: "API signup", erin.user: "browser signup", suspended.user: "wake"}
	took := j.readyAfter(back, pending, 3*time.Minute)
	for _, a := range pending {
		j.timing = append(j.timing, fmt.Sprintf("%-58s %9s", "  controller back -> "+a.user+"'s "+what[a.user]+" Ready", took[a.user].Round(time.Millisecond)))
		j.t.Logf("after the controller came back: %s's %s Ready in %s", a.user, what[a.user], took[a.user].Round(time.Millisecond))
	}
	for i := range pending {
		pending[i].sandbox = j.claimedSandbox(pending[i].user)
	}
	dave, erin = pending[0], pending[1]
	j.expectRelease(dave, releaseV1)
	for _, i := range nodes {
		resp, body := j.do(i, http.MethodGet, "/u/dave/api/messages", "", dave.api(j, i, ""))
		j.expect(resp, body, http.StatusOK, "dave's agent on "+j.e.Nodes[i]+" after the controller came back")
		resp, body = j.do(i, http.MethodGet, "/u/erin/", "", erin.browser(j, i))
		j.expect(resp, body, http.StatusOK, "erin's agent page on "+j.e.Nodes[i]+" after the controller came back")
		if !strings.Contains(body, `<base href="./">`) {
			j.t.Fatalf("erin's agent page on %s is not the app's: %.300s", j.e.Nodes[i], body)
		}
		j.expectMessage(i, suspended, text[suspended.user])
	}
	j.t.Logf("after the controller came back: dave's and erin's agents and %s's woken agent (workspace intact) served on %v, %s after the start",
		suspended.user, j.e.Nodes, time.Since(back).Round(time.Millisecond))
	return []account{dave, erin}
}

// browserSignup signs user up through node i's entry as the landing
// page's form does, follows the 303 to the one-time token view as the
// browser does, and returns the account with its session cookie.
func (j *journey) browserSignup(i int, user string) account {
	j.t.Helper()
	resp, body := j.do(i, http.MethodPost, "/users", "user="+user, map[string]string{
		"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html", "Origin": j.origin(i)})
	j.expect(resp, body, http.StatusSeeOther, user+"'s browser signup")
	a := account{user: user, cookie: sessionCookie(resp)}
	if a.cookie == "" {
		j.t.Fatalf("%s's browser signup set no Secure __Host- session cookie: %v", user, resp.Header.Values("Set-Cookie"))
	}
	view := resp.Header.Get("Location")
	cookies := []string{a.cookie}
	for _, c := range resp.Cookies() {
		if c.Path != "" && c.Path != "/" && c.Value != "" {
			cookies = append(cookies, c.Name+"="+c.Value)
		}
	}
	resp, body = j.do(i, http.MethodGet, view, "", map[string]string{"Cookie": strings.Join(cookies, "; "), "Accept": "text/html",
		"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"})
	j.expect(resp, body, http.StatusOK, user+"'s token view "+view)
	if !strings.Contains(body, `/u/`+user+`/`) {
		j.t.Fatalf("%s's token page links no agent: %.400s", user, body)
	}
	return a
}

// sessionCookie is the __Host- session cookie a response sets, or ""
// when it sets none or one without Secure.
func sessionCookie(resp *http.Response) string {
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, "__Host-") && c.Secure {
			return c.Name + "=" + c.Value
		}
	}
	return ""
}

// expectWakingPage fails unless a navigation to a's agent on node i gets
// the waking page: 503, Retry-After, and a page that reloads itself (the
// next step the user is given). It returns the page's title.
func (j *journey) expectWakingPage(i int, a account, when string) string {
	j.t.Helper()
	resp, body := j.do(i, http.MethodGet, "/u/"+a.user+"/", "", a.browser(j, i))
	what := a.user + "'s agent page on " + j.e.Nodes[i] + " " + when
	j.expect(resp, body, http.StatusServiceUnavailable, what)
	if resp.Header.Get("Retry-After") == "" || !strings.Contains(body, `http-equiv="refresh"`) ||
		!strings.Contains(body, "opens your agent by itself") {
		j.t.Fatalf("%s: a 503 without the waking page's next step (Retry-After %q): %.600s", what, resp.Header.Get("Retry-After"), body)
	}
	title, _, _ := strings.Cut(body[strings.Index(body, "<title>")+len("<title>"):], "</title>")
	return title
}

// claimedSandbox is the Sandbox user's claim is bound to, or "".
func (j *journey) claimedSandbox(user string) string {
	name, _ := j.kubectl("-n", clusterinstall.SandboxNamespace, "get", "sandboxclaim", "dsh-"+user, "-o", "jsonpath={.status.sandbox.name}")
	return name
}

// readyAfter waits, for every account at once, until its claim is bound
// to a Sandbox whose Ready condition is True, and returns how long after
// since each took; it fails after timeout.
func (j *journey) readyAfter(since time.Time, accounts []account, timeout time.Duration) map[string]time.Duration {
	j.t.Helper()
	took := map[string]time.Duration{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, a := range accounts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(since) < timeout {
				if sb := j.claimedSandbox(a.user); sb != "" {
					ready, _ := j.kubectl("-n", clusterinstall.SandboxNamespace, "get", "sandbox", sb,
						"-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
					if ready == "True" {
						mu.Lock()
						took[a.user] = time.Since(since)
						mu.Unlock()
						return
					}
				}
				time.Sleep(500 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	for _, a := range accounts {
		if _, ok := took[a.user]; !ok {
			j.t.Fatalf("%s's Sandbox not Ready %s after the controller came back", a.user, timeout)
		}
	}
	return took
}
