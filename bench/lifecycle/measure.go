package lifecycle

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/bench/load"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
)

// Signups is how many accounts sign up at once.
const Signups = 100

// wakes is how many suspended sandboxes are woken, one after another.
const wakes = 10

// Result is the lifecycle's figures.
type Result struct {
	// Signup is the time to a 201 of the signups that got one; Created
	// counts them (the others answered 202: accepted, still starting).
	Signup  load.Latency `json:"signup"`
	Created int          `json:"created"`
	// Answered is the time to any answer (201 or 202) of every signup;
	// Ready the time until each account's claim was seen Ready.
	Answered load.Latency `json:"answered"`
	Ready    load.Latency `json:"ready"`
	// WakeOverhead is the time from a request for a suspended sandbox to
	// its first response byte, minus ResumeDelay.
	WakeOverhead load.Latency `json:"wake_overhead"`
	// SuspendLag is the time from IdleTimeout after a woken sandbox's
	// last request until its Sandbox says Suspended.
	SuspendLag load.Latency `json:"suspend_lag"`
	// Startup is how long the control plane and platform took to start.
	Startup time.Duration `json:"startup_ns"`
}

// client is the browser and API client of every account.
var client = &http.Client{
	Timeout:       60 * time.Second,
	Transport:     &http.Transport{MaxIdleConnsPerHost: Signups},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Run starts a control plane and the platform, measures and stops them.
func Run(ctx context.Context) (Result, error) {
	var r Result
	t0 := time.Now()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cp, err := clustertest.Start(ctx)
	if err != nil {
		return r, fmt.Errorf("start control plane: %w", err)
	}
	defer cp.Stop()
	dir, err := os.MkdirTemp("", "sandgate-bench-")
	if err != nil {
		return r, fmt.Errorf("make temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	p, err := start(ctx, cp, dir, log)
	if p != nil {
		defer p.close()
	}
	if err != nil {
		return r, err
	}
	r.Startup = time.Since(t0)

	accounts, err := p.signups(ctx, &r)
	if err != nil {
		return r, err
	}
	r.WakeOverhead, r.SuspendLag, err = p.wakeAndIdle(ctx, accounts, wakes)
	return r, err
}

// readySince polls the claims every 20ms for up to a minute until every
// account's is Ready and returns when each was first seen so.
func (p *platform) readySince(ctx context.Context, accounts []account) map[string]time.Time {
	seen := map[string]time.Time{}
	if len(accounts) == 0 {
		return seen
	}
	want := map[string]bool{}
	for _, a := range accounts {
		want[a.user] = true
	}
	_ = poll(ctx, time.Minute, func() (bool, error) {
		list, err := p.sb.SandboxClaims(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		now := time.Now()
		for i := range list.Items {
			c := &list.Items[i]
			user := strings.TrimPrefix(c.Name, "dsh-")
			if _, ok := seen[user]; !ok && want[user] && meta.IsStatusConditionTrue(c.Status.Conditions, agents.ConditionReady) {
				seen[user] = now
			}
		}
		return len(seen) == len(want), nil
	})
	return seen
}

// get fetches path through the first node proxy as a browser would and
// returns the status and the time to the response headers.
func (p *platform) get(ctx context.Context, a account, path string) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.proxies[0]+"/u/"+a.user+path, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("build request: %w", err)
	}
	req.Host = Host
	req.Header.Set("Cookie", a.cookie)
	req.Header.Set("Accept", "application/json")
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("get %s: %w", path, err)
	}
	ttfb := time.Since(t0)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, ttfb, nil
}

// suspendedSince polls the Sandboxes every 20ms for up to timeout until
// every one in names (user -> Sandbox) is Suspended, and returns when each was first
// seen so. With pods, it also waits until none is Ready any more.
func (p *platform) suspendedSince(ctx context.Context, names map[string]string, podsGone bool, timeout time.Duration) (map[string]time.Time, error) {
	seen := map[string]time.Time{}
	err := poll(ctx, timeout, func() (bool, error) {
		list, err := p.sb.Sandboxes(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		now := time.Now()
		done := 0
		for i := range list.Items {
			s := &list.Items[i]
			for user, name := range names {
				if s.Name != name || s.Spec.OperatingMode != agents.OperatingModeSuspended {
					continue
				}
				if _, ok := seen[user]; !ok {
					seen[user] = now
				}
				if !podsGone || !readyCondition(s) {
					done++
				}
			}
		}
		return done == len(names), nil
	})
	return seen, err
}

// sandboxes maps each account's user to its Sandbox.
func (p *platform) sandboxes(ctx context.Context, accounts []account) (map[string]string, error) {
	names := map[string]string{}
	for _, a := range accounts {
		name, err := p.sandboxOf(ctx, a.user)
		if err != nil {
			return nil, err
		}
		names[a.user] = name
	}
	return names, nil
}

// wakeAndIdle waits until the sweeper has suspended the accounts after
// signup, then requests some accounts' apps one after another (each wake's
// first byte minus ResumeDelay is its overhead), then measures how long
// after IdleTimeout since that request each is suspended again.
func (p *platform) wakeAndIdle(ctx context.Context, all []account, woken int) (wake, lag load.Latency, err error) {
	names, err := p.sandboxes(ctx, all[:woken])
	if err != nil {
		return wake, lag, err
	}
	if _, err := p.suspendedSince(ctx, names, true, 2*time.Minute); err != nil {
		return wake, lag, fmt.Errorf("wait for the idle accounts' suspend: %w", err)
	}
	// Let the rest of the signups' suspend burst pass too (best effort).
	if rest, err := p.sandboxes(ctx, all[woken:]); err == nil {
		_, _ = p.suspendedSince(ctx, rest, true, 30*time.Second)
	}
	last := map[string]time.Time{}
	var over []time.Duration
	for _, a := range all[:woken] {
		code, ttfb, err := p.get(ctx, a, "/api/echo")
		if err != nil {
			return wake, lag, err
		}
		if code != http.StatusOK {
			return wake, lag, fmt.Errorf("wake %s: status %d", a.user, code)
		}
		last[a.user] = time.Now()
		over = append(over, ttfb-ResumeDelay)
	}
	mine := map[string]string{}
	for user := range last {
		mine[user] = names[user]
	}
	seen, err := p.suspendedSince(ctx, mine, false, 2*time.Minute)
	if err != nil {
		return wake, lag, fmt.Errorf("wait for the woken accounts' suspend: %w", err)
	}
	var lags []time.Duration
	for user, t := range seen {
		lags = append(lags, t.Sub(last[user])-IdleTimeout)
	}
	return load.Summarise(over), load.Summarise(lags), nil
}

// sandboxOf returns the Sandbox user's claim adopted.
func (p *platform) sandboxOf(ctx context.Context, user string) (string, error) {
	c, err := p.sb.SandboxClaims(namespace).Get(ctx, "dsh-"+user, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get %s's claim: %w", user, err)
	}
	if c.Status.Sandbox.Name == "" {
		return "", fmt.Errorf("%s's claim has no sandbox", user)
	}
	return c.Status.Sandbox.Name, nil
}

// readyCondition reports whether s is Ready.
func readyCondition(s *agents.Sandbox) bool {
	for _, c := range s.Status.Conditions {
		if c.Type == agents.ConditionReady {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
