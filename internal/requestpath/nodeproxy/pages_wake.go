package nodeproxy

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/webpage"
)

// maxPageHold is how long a browser navigation to a sandbox that is not
// Ready is held before it gets the waking page: a page within about a
// second, rather than a blank tab for WAKE_TIMEOUT.
const maxPageHold = time.Second

// pageHold is how long a navigation is held: maxPageHold, or a quarter of
// a shorter WAKE_TIMEOUT.
func (p *Proxy) pageHold() time.Duration { return min(maxPageHold, p.opts.WakeTimeout/4) }

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

// wakingMessage is the page a navigation to a sandbox that is not Ready
// gets: what is happening, the state as this node's informer sees it, how
// long it has taken, and what to do once that is longer than wakeTimeout.
// It reloads itself every refresh seconds, and the reload that finds the
// sandbox Ready opens the agent. It carries no link or asset: only the
// reload moves it on.
func wakingMessage(e informer.Entry, waited, wakeTimeout time.Duration, refresh int) webpage.Message {
	m := webpage.Message{Title: "Waking your agent", Refresh: refresh}
	var doing string
	switch {
	case e.Route.Sandbox == "":
		m.Title = "Starting your agent"
		doing = "Starting your agent: a sandbox is being prepared for it."
	case e.Route.State == informer.StateSuspended:
		doing = "Your agent was asleep; it has been asked to wake up."
	default:
		doing = "Resuming your workspace: your agent's sandbox is starting."
	}
	m.Lines = []string{doing, fmt.Sprintf("This page reloads every %d seconds and opens your agent by itself once it is ready.", refresh)}
	m.Facts = [][2]string{
		{"State", e.Route.State.String()},
		{"Waiting for", fmt.Sprintf("%d s", int(waited.Round(time.Second)/time.Second))},
	}
	if waited > wakeTimeout {
		m.Lines = append(m.Lines, fmt.Sprintf("This is taking longer than usual (more than %d s). You can keep this page open. "+
			"If your agent has not opened in a few minutes, go to your account page (the start page of this site), "+
			"check your agent's state there, and recreate it if it stays stuck.", int(wakeTimeout/time.Second)))
	} else {
		m.Lines = append(m.Lines, fmt.Sprintf("This usually takes less than %d s.", int(wakeTimeout/time.Second)))
	}
	return m
}

// wakingPage answers a navigation whose sandbox is not Ready yet: 503 with
// Retry-After and the waking page.
func (p *Proxy) wakingPage(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	x.err = err
	e, _ := p.opts.Directory.Lookup(x.route.user)
	waited := p.waker.pages.waited(x.route.user, p.opts.Now())
	ctx.Response.Header.Set("Retry-After", fmt.Sprint(wakePageRefresh))
	p.writePage(ctx, x, fasthttp.StatusServiceUnavailable, wakingMessage(e, waited, p.opts.WakeTimeout, wakePageRefresh))
}
