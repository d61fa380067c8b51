package drain

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Gate records whether a drain has begun and serves it on the ops
// listener.
type Gate struct {
	delay time.Duration
	log   *slog.Logger
	once  sync.Once
	// passed is closed once delay has passed since the drain began.
	passed chan struct{}
	begun  chan struct{}
}

// New returns a Gate whose drain answers delay after it begins.
func New(delay time.Duration, log *slog.Logger) *Gate {
	return &Gate{delay: delay, log: log, passed: make(chan struct{}), begun: make(chan struct{})}
}

// Draining reports whether a drain has begun.
func (g *Gate) Draining() bool {
	select {
	case <-g.begun:
		return true
	default:
		return false
	}
}

// Begin starts the drain; later calls change nothing.
func (g *Gate) Begin() {
	g.once.Do(func() {
		close(g.begun)
		g.log.Info("drain begun: /readyz fails from now on", "delay_ms", g.delay.Milliseconds())
		time.AfterFunc(g.delay, func() { close(g.passed) })
	})
}

// Wrap serves POST /drain and a /readyz that fails once a drain has
// begun, and passes everything else (and /readyz before a drain) to ops.
func (g *Gate) Wrap(ops http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", ops)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if g.Draining() {
			http.Error(w, "not ready: draining", http.StatusServiceUnavailable)
			return
		}
		ops.ServeHTTP(w, r)
	})
	mux.HandleFunc("POST /drain", g.serveDrain)
	mux.HandleFunc("/drain", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "drain takes POST", http.StatusMethodNotAllowed)
	})
	return mux
}

// serveDrain begins the drain for a local peer and answers once the delay
// has passed, or when the peer gives up.
func (g *Gate) serveDrain(w http.ResponseWriter, r *http.Request) {
	if !local(r) {
		g.log.Warn("drain refused: the peer is not in this pod", "peer", r.RemoteAddr)
		http.Error(w, "drain is only accepted from inside the pod", http.StatusForbidden)
		return
	}
	g.Begin()
	select {
	case <-g.passed:
		_, _ = w.Write([]byte("drained\n"))
	case <-r.Context().Done():
	}
}

// local reports whether the request's peer is in this network namespace:
// a loopback address, or the very address it connected to. The kernel
// drops packets from outside that claim either as their source, and a
// TCP peer has to receive the handshake's reply.
func local(r *http.Request) bool {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := peer.Addr().Unmap()
	if ip.IsLoopback() {
		return true
	}
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	self, err := netip.ParseAddrPort(la.String())
	return err == nil && self.Addr().Unmap() == ip && !ip.IsUnspecified()
}
