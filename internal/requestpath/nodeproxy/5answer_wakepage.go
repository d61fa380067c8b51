package nodeproxy

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/webpage"
)

// wakeClock remembers since when each user's navigations have been shown
// the waking page, so the page can say when the wait has outlasted
// WAKE_TIMEOUT. A wait is one run of waking pages, each shown within
// pageGap of the one before (the page reloads every wakePageRefresh
// seconds); it ends when the sandbox is seen Ready or when its pages stop
// (the user closed the tab), so a later wake starts a wait of its own. The
// zero value is ready to use.
type wakeClock struct {
	mu    sync.Mutex
	waits map[string]pageWait
	n     atomic.Int32 // len(waits), so Ready requests skip the lock
}

// pageWait is one user's wait: when its first and latest pages were shown.
type pageWait struct{ start, last time.Time }

// pageGap is how long after its latest page a wait is over.
const pageGap = time.Minute

// waited returns how long user has been waiting, starting the wait now if
// none is running.
func (c *wakeClock) waited(user string, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waits == nil {
		c.waits = map[string]pageWait{}
	}
	for u, w := range c.waits {
		if now.Sub(w.last) > pageGap {
			delete(c.waits, u)
		}
	}
	w, ok := c.waits[user]
	if !ok {
		w.start = now
	}
	w.last = now
	c.waits[user] = w
	c.n.Store(int32(len(c.waits)))
	return now.Sub(w.start)
}

// done ends user's wait.
func (c *wakeClock) done(user string) {
	if c.n.Load() == 0 {
		return
	}
	c.mu.Lock()
	delete(c.waits, user)
	c.n.Store(int32(len(c.waits)))
	c.mu.Unlock()
}

// wakeView is what the waking page is made of: the user's entry as this
// node's informer sees it, what the waker knows of the wake, how long the
// page has been waiting, and where its links go.
type wakeView struct {
	entry   informer.Entry
	asked   bool        // a wake call succeeded within WAKE_TIMEOUT
	failure wakeFailure // the user's last failed wake call
	waited  time.Duration
	timeout time.Duration // WAKE_TIMEOUT
	refresh int           // seconds between the page's reloads
	// here is the page itself (to ask again), account the account page
	// and recreate its confirmation step before recreating the workspace.
	here, account, recreate string
}

// wakeView gathers the waking page of x's user, which reloads every
// refresh seconds while it waits.
func (a *answers) wakeView(x *exchange, refresh int) wakeView {
	user := x.route.user
	e, _ := a.directory.Lookup(user)
	asked, failure := a.waker.state(user, e.Route.Sandbox)
	return wakeView{
		entry: e, asked: asked, failure: failure,
		waited: a.waker.pages.waited(user, a.now()), timeout: a.wakeTimeout, refresh: refresh,
		here: x.route.prefix() + x.route.target, account: a.mainURL(x, "/"), recreate: a.mainURL(x, "/recreate"),
	}
}

// wakingMessage is the page a navigation to a sandbox that is not Ready
// gets: what is happening as steps, the state as this node's informer sees
// it and how long it has taken. While the wait goes on it reloads itself,
// and the reload that finds the sandbox Ready opens the agent; once the
// wait is longer than WAKE_TIMEOUT it also says what to do, the step that
// loses nothing first. A suspended sandbox whose wake the auth API refused
// gets what failed and what to do instead, and no reload: the refusal
// stays until someone changes something, and each reload would only ask
// again to be refused.
func wakingMessage(v wakeView) webpage.Message {
	r := v.entry.Route
	m := webpage.Message{Title: "Waking your agent", Refresh: v.refresh, Steps: wakeSteps(v)}
	m.Facts = [][2]string{
		{"State", r.State.String()},
		{"Waiting for", fmt.Sprintf("%d s", wholeSeconds(v.waited))},
	}
	tryAgain := webpage.Link{Href: v.here, Text: "Try again"}
	account := webpage.Link{Href: v.account, Text: "Your account", Secondary: true}
	if r.State == informer.StateSuspended && v.failure.kind != notFailed {
		m.Alert, m.Links = true, []webpage.Link{tryAgain, account}
		if v.failure.kind == refused {
			m.Title, m.Refresh = "Your agent could not be woken", 0
			m.Lines = refusalLines(v.failure.status)
			return m
		}
		m.Title = "Your agent could not be woken yet"
		m.Lines = []string{
			"The sign-in service, which wakes agents, could not be reached just now (it may be restarting). Your workspace is kept.",
			fmt.Sprintf("This page tries again by itself in %d s.", v.refresh),
		}
		return m
	}
	verb, doing := "waking", "Resuming your workspace: your agent's sandbox is starting."
	switch {
	case r.Sandbox == "":
		verb, doing = "starting", "Starting your agent: a sandbox is being prepared for it."
	case r.State == informer.StateSuspended:
		doing = "Your agent was asleep; it has been asked to wake up. Your workspace is kept."
	}
	m.Title = capitalize(verb) + " your agent"
	reloads := fmt.Sprintf("This page reloads every %d seconds and opens your agent by itself once it is ready.", v.refresh)
	timeout := wholeSeconds(v.timeout)
	if v.waited <= v.timeout {
		m.Lines = []string{doing, reloads, fmt.Sprintf("This usually takes less than %d s.", timeout)}
		return m
	}
	m.Title = "Still " + verb + " your agent"
	m.Lines = []string{
		doing,
		fmt.Sprintf("This is taking longer than usual (more than %d s). %s You can keep it open.", timeout, reloads),
		"If your agent has not opened in a few minutes: try again, check your agent on your account page, " +
			"and if it stays stuck, tell the people who run this service.",
		"Only as a last resort, recreate your workspace from your account page: that deletes everything in it, " +
			"signs out your other browsers and replaces your access token.",
	}
	m.Links = []webpage.Link{tryAgain, account, {Href: v.recreate, Text: "Recreate workspace…", Secondary: true}}
	return m
}

// refusalLines say why the auth API refused a wake with status, and what
// helps.
func refusalLines(status int) []string {
	answered := fmt.Sprintf("%d %s", status, http.StatusText(status))
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return []string{
			"The sign-in service refused to wake your agent (it answered " + answered + "): " +
				"the part of the service that took your request is not allowed to ask for wake-ups. That is a problem in how the service is set up, not in your agent.",
			"Your workspace is kept. Tell the people who run this service what this page says; trying again helps only once they have fixed it, " +
				"and recreating your workspace would not help: it would only delete it.",
			"This page does not reload by itself.",
		}
	case http.StatusNotFound:
		return []string{
			"The sign-in service found no agent for your account (it answered " + answered + "): it may have just been recreated or deleted.",
			"Open your account page to see your agent's state. If that does not explain it, tell the people who run this service.",
			"This page does not reload by itself.",
		}
	}
	return []string{
		"The sign-in service refused to wake your agent (it answered " + answered + ").",
		"Your workspace is kept. Try again in a moment; if it keeps failing, tell the people who run this service what this page says.",
		"This page does not reload by itself.",
	}
}

// wakeSteps are the waking page's steps: asked to wake, the sandbox
// starting, its pod scheduled on a node, the app answering. The informer
// routes a sandbox once it is Ready, its app answering, so the last step
// is at most in progress: the reload that finds it done opens the agent.
func wakeSteps(v wakeView) []webpage.Step {
	r := v.entry.Route
	asked, starting, scheduled, answering := webpage.StepDone, webpage.StepActive, webpage.StepWaiting, webpage.StepWaiting
	switch {
	case r.State == informer.StateSuspended:
		starting = webpage.StepWaiting
		switch {
		case v.failure.kind != notFailed:
			asked = webpage.StepFailed
		case !v.asked:
			asked = webpage.StepActive
		}
	case r.Node != "":
		starting, scheduled, answering = webpage.StepDone, webpage.StepDone, webpage.StepActive
	}
	scheduledText := "Pod scheduled on a node"
	if r.Node != "" && r.State != informer.StateSuspended {
		scheduledText = "Pod scheduled on node " + r.Node
	}
	return []webpage.Step{
		{Text: "Asked to wake up", State: asked},
		{Text: "Sandbox starting", State: starting},
		{Text: scheduledText, State: scheduled},
		{Text: "Agent app answering", State: answering},
	}
}

// wholeSeconds is d rounded to whole seconds.
func wholeSeconds(d time.Duration) int { return int(d.Round(time.Second) / time.Second) }

// wakingPage answers a navigation whose sandbox is not Ready yet: 503 with
// Retry-After and the waking page.
func (a *answers) wakingPage(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	x.err = err
	ctx.Response.Header.Set("Retry-After", fmt.Sprint(wakePageRefresh))
	a.writePage(ctx, x, fasthttp.StatusServiceUnavailable, wakingMessage(a.wakeView(x, wakePageRefresh)))
}
