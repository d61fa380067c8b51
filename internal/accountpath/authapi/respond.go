package authapi

import (
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/sandgate/sandgate/internal/jwt"
)

// writeJSON sends v with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// errorBody is every JSON error response.
type errorBody struct {
	Error string `json:"error"`
}

// fail answers with the status statusOf gives err: a page for browsers, JSON
// otherwise. The client sees only the safe message; the log gets the cause.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code, reason, msg := s.refused(w, r, err)
	if browser(r) {
		s.errorPage(w, r, code, reason)
		return
	}
	writeJSON(w, code, errorBody{Error: msg})
}

// refused records a refusal (the audit reason, the rejection metric, the
// log line), sets its Retry-After, and returns what statusOf gives err.
func (s *Server) refused(w http.ResponseWriter, r *http.Request, err error) (code int, reason, msg string) {
	code, reason, msg = statusOf(err)
	auditOf(r).reason = reason
	s.opts.Metrics.Rejections.WithLabelValues(reason).Inc()
	if code >= 500 {
		s.log.Warn("request failed", "route", routeOf(r), "reason", reason, "error", err)
	} else {
		s.log.Debug("request refused", "route", routeOf(r), "reason", reason, "error", err)
	}
	if v, ok := retryAfterHeader(err); ok {
		w.Header().Set("Retry-After", v)
	}
	return code, reason, msg
}

// seeOther redirects a browser after a form post.
func seeOther(w http.ResponseWriter, r *http.Request, to string) {
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// since is the age of start in seconds, for histograms.
func since(start time.Time) float64 { return time.Since(start).Seconds() }

// readInternalJSON reads an internal call's JSON body of at most limit
// bytes into v. A body that is unreadable, too large, not JSON, or fails
// complete is answered with the usage hint.
func readInternalJSON(w http.ResponseWriter, r *http.Request, limit int64, v any, complete func() bool, hint string) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return bodyError(err)
	}
	if json.Unmarshal(body, v) != nil || !complete() {
		return badRequest("send %s", hint)
	}
	return nil
}

// writeSession answers a renewal or a redemption: the token of kind, its
// claims, and the Set-Cookie value that carries it, so cookie attributes
// are decided in the auth API only.
func (s *Server) writeSession(w http.ResponseWriter, kind tokenKind, tok string, c jwt.Claims) {
	ck := s.sessionCookie(kind, tok, c)
	writeJSON(w, http.StatusOK, renewResponse{
		Token: tok, User: c.User, ExpiresAt: c.Expiry.Unix(), MaxAge: ck.MaxAge, SetCookie: ck.String(),
	})
}
