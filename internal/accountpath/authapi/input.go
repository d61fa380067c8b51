package authapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// input is what a form or JSON body may carry. Unknown fields are ignored so
// clients written for the seed keep working.
type input struct {
	User    string `json:"user"`
	Invite  string `json:"invite"`
	Token   string `json:"token"`
	Confirm string `json:"confirm"`
	// At and Repeat are a wake schedule's time of day (HH:MM, UTC) and
	// repeat (once, daily, weekdays, or never to clear it).
	At     string `json:"at"`
	Repeat string `json:"repeat"`
	// TokensPerDay is an admin's egress budget for the account: a count,
	// 0 for no limit, or "default" for the node proxies' own.
	TokensPerDay string `json:"tokens_per_day"`
	// Next is the sign-in form's deep link (nextOf bounds it), not read
	// from JSON.
	Next string `json:"-"`
	// FormToken is an admin page form's token (adminOf), not read from
	// JSON.
	FormToken string `json:"-"`
}

// maxFieldLen bounds each field; user names and tokens are far shorter.
const maxFieldLen = 512

// readInput reads a bounded form or JSON body. A body over the limit is
// ErrTooLarge (a declared Content-Length is refused before reading), a
// body of another type ErrUnsupportedMedia, and an empty body an empty input.
func (s *Server) readInput(w http.ResponseWriter, r *http.Request) (input, error) {
	if r.ContentLength > s.opts.MaxBodyBytes {
		return input{}, fmt.Errorf("%w: declared %d bytes", ErrTooLarge, r.ContentLength)
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	ct := r.Header.Get("Content-Type")
	media := ""
	if ct != "" {
		var err error
		if media, _, err = mime.ParseMediaType(ct); err != nil {
			return input{}, fmt.Errorf("%w: %w", ErrUnsupportedMedia, err)
		}
	}
	var in input
	switch media {
	case "application/json":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return input{}, bodyError(err)
		}
		if len(bytes.TrimSpace(body)) == 0 {
			break
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&in); err != nil {
			return input{}, badRequest("body is not a JSON object of strings")
		}
		if dec.More() {
			return input{}, badRequest("trailing data after the JSON object")
		}
	case "application/x-www-form-urlencoded", "multipart/form-data":
		var err error
		if media == "multipart/form-data" {
			err = r.ParseMultipartForm(s.opts.MaxBodyBytes)
		} else {
			err = r.ParseForm()
		}
		if err != nil {
			return input{}, bodyError(err)
		}
		in = input{
			User:    r.PostFormValue("user"),
			Invite:  r.PostFormValue("invite"),
			Token:   r.PostFormValue("token"),
			Confirm: r.PostFormValue("confirm"),
			Next:    r.PostFormValue("next"),
			At:      r.PostFormValue("at"),
			Repeat:  r.PostFormValue("repeat"),

			FormToken:    r.PostFormValue("form_token"),
			TokensPerDay: r.PostFormValue("tokens_per_day"),
		}
	case "":
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			return input{}, bodyError(err)
		}
		if n > 0 {
			return input{}, fmt.Errorf("%w: body without a Content-Type", ErrUnsupportedMedia)
		}
	default:
		return input{}, fmt.Errorf("%w: %s", ErrUnsupportedMedia, media)
	}
	for _, f := range []string{in.User, in.Invite, in.Token, in.Confirm, in.At, in.Repeat, in.FormToken, in.TokensPerDay} {
		if len(f) > maxFieldLen {
			return input{}, badRequest("a field is longer than %d bytes", maxFieldLen)
		}
	}
	in.User = strings.TrimSpace(in.User)
	in.Token = strings.TrimSpace(in.Token)
	in.Confirm = strings.TrimSpace(in.Confirm)
	return in, nil
}

func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return fmt.Errorf("%w: over %d bytes", ErrTooLarge, mbe.Limit)
	}
	return badRequest("unreadable body")
}

// bearer returns the token of an `Authorization: Bearer` header, or "".
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return ""
	}
	return strings.TrimSpace(h[len(prefix):])
}

// isForm reports whether r carries a form body.
func isForm(r *http.Request) bool {
	media, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return media == "application/x-www-form-urlencoded" || media == "multipart/form-data"
}

// browser reports whether the client is a browser that wants pages and
// redirects rather than JSON: it posted a form, or sent no body and asks for
// HTML, and does not ask for JSON first.
func browser(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	if prefersJSON(accept) {
		return false
	}
	return isForm(r) || strings.Contains(accept, "text/html")
}

// prefersJSON reports whether an Accept header names JSON before HTML.
func prefersJSON(accept string) bool {
	j := strings.Index(accept, "application/json")
	if j < 0 {
		return false
	}
	h := strings.Index(accept, "text/html")
	return h < 0 || j < h
}
