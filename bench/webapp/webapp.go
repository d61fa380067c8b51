// Package webapp is the bench's realistic app: a net/http server that
// renders an html/template page of about 4 KiB on every request, standing
// in for the Python and Node web servers agents run, which take far longer
// per request than the fasthttp origin. It answers the launch-token
// exchange as the bench's pods expect (podlogs.Exchange).
package webapp

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/bench/podlogs"
)

// PagePath is the rendered page.
const PagePath = "/page"

// page is an agent's conversation view.
var page = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<link rel="stylesheet" href="/static/app.css"></head>
<body><header><h1>{{.Title}}</h1><nav>{{range .Links}}<a href="{{.}}">{{.}}</a> {{end}}</nav></header>
<main>{{range .Messages}}<article class="msg {{.Role}}"><h2>{{.Role}} <time>{{.At.Format "15:04:05"}}</time></h2><p>{{.Text}}</p></article>
{{end}}</main><footer>{{len .Messages}} messages</footer></body></html>
`))

// message is one turn of the conversation.
type message struct {
	Role string
	At   time.Time
	Text string
}

// view is the page's data, fixed so every page has the same size.
type view struct {
	Title    string
	Links    []string
	Messages []message
}

// app serves the page and the token exchange.
type app struct {
	v view
}

// New returns the app's handler.
func New() http.Handler {
	v := view{Title: "agent <session> & notes", Links: []string{"/", "/files", "/settings", "/logout"}}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i := range 24 {
		role := "user"
		if i%2 == 1 {
			role = "agent"
		}
		v.Messages = append(v.Messages, message{Role: role, At: at.Add(time.Duration(i) * 37 * time.Second),
			Text: fmt.Sprintf("Step %d: read the file, check \"%s\" <ok>, then write the summary.", i, role)})
	}
	return &app{v: v}
}

// ServeHTTP renders the page at PagePath and answers the token exchange
// at /.
func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case PagePath:
		var b bytes.Buffer
		if err := page.Execute(&b, a.v); err != nil {
			http.Error(w, "render failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		_, _ = w.Write(b.Bytes())
	case "/":
		c, ok := podlogs.Exchange(r.URL.Query().Get("token"))
		if !ok {
			http.Error(w, "unknown token", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Set-Cookie", c)
		http.Redirect(w, r, "/", http.StatusSeeOther)
	default:
		http.NotFound(w, r)
	}
}

// PageSize is the length of every rendered page.
func PageSize() int {
	a := New().(*app)
	var b bytes.Buffer
	if err := page.Execute(&b, a.v); err != nil {
		panic(fmt.Sprintf("render the bench page: %v", err))
	}
	return b.Len()
}
