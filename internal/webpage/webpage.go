package webpage

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html/template"
	"io"
	"strings"
)

// Style is the stylesheet of every page, inlined in its <style> element
// and admitted by CSP through its hash.
//
//go:embed style.css
var Style string

var styleHash = func() string {
	sum := sha256.Sum256([]byte(Style))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

// CSP is the Content-Security-Policy of a page: exactly the inline Style
// and nothing else, no script, no external assets, forms only to this
// origin and formTargets (scheme://host origins a form's redirects may end
// on), no framing.
func CSP(formTargets ...string) string {
	return strings.Join([]string{
		"default-src 'none'",
		"style-src " + styleHash,
		strings.Join(append([]string{"form-action 'self'"}, formTargets...), " "),
		"frame-ancestors 'none'",
		"base-uri 'none'",
	}, "; ")
}

// Headers returns the headers every page carries, name then value, with
// csp as its Content-Security-Policy.
func Headers(csp string) [][2]string {
	return [][2]string{
		{"Content-Type", "text/html; charset=utf-8"},
		{"Content-Security-Policy", csp},
		{"X-Content-Type-Options", "nosniff"},
		{"X-Frame-Options", "DENY"},
		{"Referrer-Policy", "same-origin"},
		{"Cache-Control", "no-store"},
	}
}

// shared holds the template function "style", which puts Style into a
// template's <style> element unescaped, and the templates any page may
// call: "facts" shows a [][2]string as a term/description list, nothing
// when it is empty.
var shared = template.Must(template.New("").Funcs(template.FuncMap{
	"style": func() template.CSS { return template.CSS(Style) },
}).Parse(`{{define "facts"}}
{{- if .}}
<dl>
{{- range .}}
<dt>{{index . 0}}</dt><dd>{{index . 1}}</dd>
{{- end}}
</dl>
{{- end}}
{{- end}}`))

// Templates returns a new template set with the shared function and
// templates, to parse a page's own templates into.
func Templates() *template.Template { return template.Must(shared.Clone()) }

// Link is one next step a message page offers.
type Link struct {
	Href string
	Text string
	// Secondary draws the link as a quieter button.
	Secondary bool
}

// Message is a page that says what happened and what to do next: an error
// or a wait.
type Message struct {
	// Title is the document title and the page's heading.
	Title string
	// Lines are paragraphs of plain text. The first says what happened;
	// Steps and Facts follow it, then the others (what to do).
	Lines []string
	// Steps are the stages of a wait, each with how far it got.
	Steps []Step
	// Facts are shown as a term/description list (e.g. the agent's state).
	Facts [][2]string
	Links []Link
	// Refresh, when positive, reloads the page after that many seconds.
	Refresh int
	// Alert marks the first line as an error for assistive technology.
	Alert bool
}

// Step is one stage of a wait, shown in order with the others.
type Step struct {
	Text  string
	State StepState
}

// StepState is how far a Step got.
type StepState uint8

// States of a Step.
const (
	// StepWaiting is a stage not reached, or not seen yet.
	StepWaiting StepState = iota
	// StepActive is the stage under way.
	StepActive
	// StepDone is a stage passed.
	StepDone
	// StepFailed is the stage the wait failed at.
	StepFailed
)

// String is the state in words, shown after the step's text, so that it
// never rests on colour or a symbol alone.
func (s StepState) String() string {
	switch s {
	case StepActive:
		return "in progress"
	case StepDone:
		return "done"
	case StepFailed:
		return "failed"
	}
	return "waiting"
}

// class is the state's class in Style.
func (s StepState) class() string {
	switch s {
	case StepActive:
		return "step-active"
	case StepDone:
		return "step-done"
	case StepFailed:
		return "step-failed"
	}
	return "step-waiting"
}

var messageTmpl = template.Must(Templates().New("message").Funcs(template.FuncMap{
	"stepClass":  StepState.class,
	"stepActive": func(s StepState) bool { return s == StepActive },
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{- if gt .Refresh 0}}
<meta http-equiv="refresh" content="{{.Refresh}}">
{{- end}}
<title>{{.Title}}</title>
<style>{{style}}</style>
</head>
<body>
<main>
<p class="muted">sandgate</p>
<h1>{{.Title}}</h1>
{{- range $i, $l := .Lines}}
<p{{if and $.Alert (eq $i 0)}} class="error" role="alert"{{end}}>{{$l}}</p>
{{- if eq $i 0}}{{template "progress" $}}{{end}}
{{- else}}{{template "progress" .}}
{{- end}}
{{- if .Links}}
<nav aria-label="Next steps">
{{- range .Links}}
<a class="button{{if .Secondary}} secondary{{end}}" href="{{.Href}}">{{.Text}}</a>
{{- end}}
</nav>
{{- end}}
</main>
</body>
</html>
{{- define "progress"}}
{{- if .Steps}}
<ol class="steps" aria-label="Progress">
{{- range .Steps}}
<li class="{{stepClass .State}}"{{if stepActive .State}} aria-current="step"{{end}}>{{.Text}}: <span class="step-state">{{.State}}</span></li>
{{- end}}
</ol>
{{- end}}
{{- template "facts" .Facts}}
{{- end}}
`))

// Render writes m as a complete page.
func Render(w io.Writer, m Message) error {
	var buf bytes.Buffer
	if err := messageTmpl.Execute(&buf, m); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
