package agentapp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// console is the container's stdout and stderr. Each line goes out in one
// Write under one lock, so a CRI log writer never sees interleaved halves,
// even when both streams share a writer.
type console struct {
	mu  sync.Mutex
	out io.Writer
	err io.Writer
}

func (c *console) write(w io.Writer, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	io.WriteString(w, line)
}

func (c *console) outf(format string, args ...any) { c.write(c.out, format, args...) }
func (c *console) errf(format string, args ...any) { c.write(c.err, format, args...) }

// stderrWriter adapts the console's stderr for http.Server.ErrorLog.
type stderrWriter struct{ c *console }

// Write writes p to stderr as one line.
func (s stderrWriter) Write(p []byte) (int, error) {
	s.c.errf("%s", p)
	return len(p), nil
}

// accessLog writes one stdout line per request after it ends. It logs the
// escaped path only: the query may carry the launch token.
func accessLog(c *console, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		c.outf("dsh web: %s %s %d %dms", r.Method, r.URL.EscapedPath(), status, time.Since(start).Milliseconds())
	})
}

// statusRecorder remembers the response status. Unwrap lets
// http.ResponseController reach Flush; Hijack records the WebSocket upgrade.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the first status written.
func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200.
func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap returns the wrapped writer for http.ResponseController.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Hijack takes over the connection and records 101 Switching Protocols.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil {
		s.status = http.StatusSwitchingProtocols
	}
	return conn, brw, err
}
