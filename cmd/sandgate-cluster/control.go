package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

// controlHelp is what up's --help says about --control-socket.
const controlHelp = `listen on this Unix socket (mode 0600) for control requests, for tests of an
agent-sandbox controller outage or upgrade: POST /sandbox-controller/stop ends the
controller stand-in as a rolling Deployment does (SIGTERM, SIGKILL after 15s) and
answers 204 once it has exited; POST /sandbox-controller/start[?release=v0.5.6]
starts it again, as the release given or its default (v1.0.13), and answers 204;
GET /sandbox-controller answers {"running":bool,"release":"..."}. Empty: no socket`

// standin is the agent-sandbox controller stand-in up runs on the host,
// which the control socket can end and start again.
type standin struct {
	// run starts the binary with args as a cluster process.
	run  func(args ...string) (*controlplane.Process, error)
	args []string // before --release

	mu      sync.Mutex
	proc    *controlplane.Process // nil or exited when stopped
	release string                // as started; "" is the stand-in's default
}

// standinGrace is how long the stand-in has to end after SIGTERM, as a
// Deployment's terminationGracePeriodSeconds.
const standinGrace = 15 * time.Second

// start starts the stand-in as release ("" for its default) unless it
// runs, and fails if it ends within its first second (a refused flag).
func (s *standin) start(release string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.Exited() {
		return fmt.Errorf("%w: it runs as %s", errRunning, s.releaseName())
	}
	args := s.args
	if release != "" {
		args = append(append([]string(nil), args...), "--release="+release)
	}
	p, err := s.run(args...)
	if err != nil {
		return err
	}
	s.proc, s.release = p, release
	select {
	case <-p.Done():
		return fmt.Errorf("the controller stand-in ended at once: %s", p.LogTail())
	case <-time.After(time.Second):
	}
	return nil
}

// stop ends the stand-in and returns once it has exited.
func (s *standin) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	return s.proc.Stop(standinGrace)
}

// releaseName is the release the stand-in was started as.
func (s *standin) releaseName() string {
	if s.release == "" {
		return "its default release"
	}
	return s.release
}

// errRunning refuses a start of a stand-in that runs.
var errRunning = errors.New("the controller stand-in is already running")

// serveControl answers control requests on a Unix socket at path until
// ctx ends; it removes the socket when it returns.
func serveControl(ctx context.Context, path string, s *standin) (stop func(), err error) {
	_ = os.Remove(path) // a socket a killed run left
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on the control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict the control socket: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sandbox-controller", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		running, release := s.proc != nil && !s.proc.Exited(), s.release
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"running": running, "release": release})
	})
	mux.HandleFunc("POST /sandbox-controller/stop", func(w http.ResponseWriter, r *http.Request) {
		answer(w, s.stop())
	})
	mux.HandleFunc("POST /sandbox-controller/start", func(w http.ResponseWriter, r *http.Request) {
		answer(w, s.start(r.URL.Query().Get("release")))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		_ = srv.Close() // closes ln, which removes the socket
		<-done
	}, nil
}

// answer is 204, 409 for a start of a running stand-in, else 500 with
// the error.
func answer(w http.ResponseWriter, err error) {
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, errRunning):
		http.Error(w, err.Error(), http.StatusConflict)
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
