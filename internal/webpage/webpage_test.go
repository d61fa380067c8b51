package webpage

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

// TestCSPAdmitsExactlyTheStyle: the page's inline style is the one CSP
// admits by hash, and CSP admits nothing else.
func TestCSPAdmitsExactlyTheStyle(t *testing.T) {
	var b strings.Builder
	if err := Render(&b, Message{Title: "t"}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	i, j := strings.Index(page, "<style>"), strings.Index(page, "</style>")
	sum := sha256.Sum256([]byte(page[i+len("<style>") : j]))
	csp := CSP("http://*.u.example.test:*")
	for _, want := range []string{"default-src 'none'", "style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'",
		"form-action 'self' http://*.u.example.test:*", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "script") || strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q", csp)
	}
	for _, bad := range []string{"url(", "@import", "http:", "https:"} {
		if strings.Contains(Style, bad) {
			t.Errorf("stylesheet loads %q", bad)
		}
	}
}

func TestRenderMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Message
		want []string
		not  []string
	}{
		{"escaped", Message{Title: "<b>x</b>", Lines: []string{`"quoted" & <i>`}},
			[]string{"<title>&lt;b&gt;x&lt;/b&gt;</title>", "&#34;quoted&#34; &amp; &lt;i&gt;"}, []string{"<b>x", "<i>"}},
		{"refresh and facts", Message{Title: "w", Refresh: 3, Facts: [][2]string{{"State", "suspended"}}},
			[]string{`<meta http-equiv="refresh" content="3">`, "<dt>State</dt><dd>suspended</dd>"}, nil},
		{"no refresh", Message{Title: "w"}, nil, []string{"refresh", "<dl>", "<nav", "<ol"}},
		{"steps and facts after the first line", Message{Title: "w", Lines: []string{"what happened", "what to do"}, Facts: [][2]string{{"State", "pending"}},
			Steps: []Step{{Text: "Asked", State: StepDone}, {Text: "Starting", State: StepActive}, {Text: "Scheduled"}, {Text: "Answering", State: StepFailed}}},
			[]string{"<p>what happened</p>\n<ol class=\"steps\" aria-label=\"Progress\">\n" +
				`<li class="step-done">Asked: <span class="step-state">done</span></li>` + "\n" +
				`<li class="step-active" aria-current="step">Starting: <span class="step-state">in progress</span></li>` + "\n" +
				`<li class="step-waiting">Scheduled: <span class="step-state">waiting</span></li>` + "\n" +
				`<li class="step-failed">Answering: <span class="step-state">failed</span></li>` + "\n</ol>\n<dl>",
				"</dl>\n<p>what to do</p>"}, nil},
		{"steps without lines", Message{Title: "w", Steps: []Step{{Text: "Asked"}}}, []string{"<h1>w</h1>\n<ol class=\"steps\""}, nil},
		{"alert and links", Message{Title: "e", Alert: true, Lines: []string{"bad"}, Links: []Link{{Href: "/", Text: "Sign in"}, {Href: "javascript:alert(1)", Text: "x", Secondary: true}}},
			[]string{`<p class="error" role="alert">bad</p>`, `<a class="button" href="/">Sign in</a>`, `class="button secondary" href="#ZgotmplZ"`}, []string{"javascript:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := Render(&b, tc.m); err != nil {
				t.Fatal(err)
			}
			page := b.String()
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q:\n%s", w, page)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(page, n) {
					t.Errorf("page has %q:\n%s", n, page)
				}
			}
		})
	}
}
