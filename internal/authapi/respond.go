package authapi

import (
	"encoding/json"
	"net/http"
	"time"
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
	code, reason, msg := statusOf(err)
	s.opts.Metrics.Rejections.WithLabelValues(reason).Inc()
	if code >= 500 {
		s.log.Warn("request failed", "route", routeOf(r), "reason", reason, "error", err)
	} else {
		s.log.Debug("request refused", "route", routeOf(r), "reason", reason, "error", err)
	}
	if v, ok := retryAfterHeader(err); ok {
		w.Header().Set("Retry-After", v)
	}
	if browser(r) {
		s.renderPage(w, r, code, pageData{Error: msg, Status: code})
		return
	}
	writeJSON(w, code, errorBody{Error: msg})
}

// seeOther redirects a browser after a form post.
func seeOther(w http.ResponseWriter, r *http.Request, to string) {
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// since is the age of start in seconds, for histograms.
func since(start time.Time) float64 { return time.Since(start).Seconds() }
