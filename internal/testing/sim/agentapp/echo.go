package agentapp

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// maxEchoBody caps the request body /api/echo reads to count it.
const maxEchoBody = 64 << 20

// Echo is the JSON reply of /api/echo: the request as the app received it,
// so proxy tests can prove which headers, Host and path reach the app.
type Echo struct {
	// Method is the request method.
	Method string `json:"method"`
	// Path is the decoded URL path.
	Path string `json:"path"`
	// RequestURI is the request target exactly as sent.
	RequestURI string `json:"request_uri"`
	// RawQuery is the query without the '?'.
	RawQuery string `json:"raw_query"`
	// Host is the Host header (net/http removes it from Headers).
	Host string `json:"host"`
	// Headers holds every other request header.
	Headers http.Header `json:"headers"`
	// BodyLength counts the body bytes read, up to 64 MiB.
	BodyLength int64 `json:"body_length"`
}

// serveEcho answers /api/echo and everything under it, for any method.
func serveEcho(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxEchoBody))
	if err != nil {
		http.Error(w, "cannot read body", bodyErrorStatus(err))
		return
	}
	writeJSON(w, http.StatusOK, Echo{
		Method:     r.Method,
		Path:       r.URL.Path,
		RequestURI: r.RequestURI,
		RawQuery:   r.URL.RawQuery,
		Host:       r.Host,
		Headers:    r.Header,
		BodyLength: n,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// bodyErrorStatus maps a failed body read to 413 when the cap was hit and
// 400 otherwise.
func bodyErrorStatus(err error) int {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}
