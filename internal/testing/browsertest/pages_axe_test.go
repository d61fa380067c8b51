package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// narrowWidth is the small-screen width every page is also checked at.
const narrowWidth = 360

// axeScript returns axe-core's browser build, which `make axe` installs
// from the npm registry into $SANDGATE_CACHE/npm (default
// ~/.cache/sandgate/npm). Without it the accessibility checks are skipped
// with a log line, unless CI is set: there a missing axe-core fails.
var axeScript = sync.OnceValues(func() (string, error) {
	cache := os.Getenv("SANDGATE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(home, ".cache", "sandgate")
	}
	b, err := os.ReadFile(filepath.Join(cache, "npm", "node_modules", "axe-core", "axe.min.js"))
	return string(b), err
})

// axeAvailable reports whether the accessibility checks can run.
func axeAvailable(t *testing.T) bool {
	t.Helper()
	if _, err := axeScript(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("axe-core not installed (%v); run make axe", err)
		}
		t.Logf("axe-core not installed (%v): accessibility checks skipped; run make axe", err)
		return false
	}
	return true
}

// axeViolation is one failed axe-core rule and where it failed.
type axeViolation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
}

// checkAccessibility loads axe-core into the current page and fails on
// any violation of the WCAG 2.1 A and AA rules (labels, contrast, landmark
// and heading structure, ...). A page that reloads itself may replace the
// document mid-run: the check is then repeated on the new one.
//
// Pages that wait for something (the waking page, "try again" pages) must
// move on by themselves without script, so they refresh by design: for
// them axe-core's meta-refresh rule is off. They say in their text that
// and how often they reload, and the reload changes the page only when
// the wait is over, which WCAG 2.2.1 allows for a real-time event.
func checkAccessibility(ctx context.Context, what string) error {
	src, err := axeScript()
	if err != nil {
		return nil // axeAvailable has said why
	}
	run := `(async () => {
  const waits = !!document.querySelector('meta[http-equiv="refresh"]');
  const r = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
    rules: {'meta-refresh': {enabled: !waits}}, resultTypes: ['violations']});
  return JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map(n => n.target.join(' '))})));
})()`
	var last error
	for range 3 {
		var out string
		out, last = chromedp.Run(ctx, chromedp.Evaluate[string](src+";\n"+run, chromedp.EvalAwaitPromise))
		if last != nil {
			continue
		}
		var vs []axeViolation
		if err := json.Unmarshal([]byte(out), &vs); err != nil {
			return fmt.Errorf("axe-core result on %s: %w", what, err)
		}
		if len(vs) == 0 {
			return nil
		}
		var b strings.Builder
		for _, v := range vs {
			fmt.Fprintf(&b, "\n  %s (%s): %s at %s", v.ID, v.Impact, v.Help, strings.Join(v.Targets, ", "))
		}
		return fmt.Errorf("%w: accessibility violations on %s:%s", errUnexpected, what, b.String())
	}
	return fmt.Errorf("run axe-core on %s: %w", what, last)
}

// narrow sets the viewport to narrowWidth and checks that the page fits
// it without scrolling sideways.
func narrow(ctx context.Context, what string) error {
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(narrowWidth, 740)); err != nil {
		return fmt.Errorf("narrow viewport: %w", err)
	}
	return until(ctx, what+" fitting "+fmt.Sprint(narrowWidth)+" px", fmt.Sprintf(`document.documentElement.scrollWidth <= %d`, narrowWidth))
}

// wide restores the browser's own window size.
func wide(ctx context.Context) error {
	return chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900))
}

// checkPage runs what the pages must all pass on the page in s's tab, as
// two steps with their screenshots: accessibility at full width, then the
// same page at narrowWidth.
func (s *session) checkPage(what string) {
	s.t.Helper()
	s.do(what+" accessible", stepTimeout, func(ctx context.Context) error {
		return checkAccessibility(ctx, what)
	})
	s.do(what+" at 360 px", stepTimeout, func(ctx context.Context) error {
		return narrow(ctx, what)
	})
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout)
	defer cancel()
	if err := wide(ctx); err != nil {
		s.t.Fatalf("restore the viewport after %s: %v", what, err)
	}
}
