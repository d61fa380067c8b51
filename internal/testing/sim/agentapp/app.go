// Package agentapp is a STAND-IN for DSH Web, the agent web app that runs in
// every sandbox pod. It exists only for sandgate's tests, the local demo
// (the simulated kubelet runs one App per pod) and cmd/agent-standin, which
// runs one in a container of a real test cluster. Neither authapi nor
// nodeproxy may import it.
//
// It copies the DSH Web behaviour that sandgate depends on:
//
//   - on start it prints one launch line, "dsh web: listening on
//     http://<addr>/?token=<token>", to its container stdout, and with
//     [Options.TokenFile] it also writes the token to that file first (the
//     seed's proposed "dsh web --token-file");
//   - GET /?token=<token> answers 303 with a dsh-auth-<id> cookie that is
//     valid for this process only, and every path but [ProbePath] answers 401
//     without that cookie;
//   - requests whose Host is not trusted are refused with 400 on every
//     path, ProbePath included: localhost and 127.0.0.1 (any port) are
//     always trusted, then DSH_TRUSTED_HOSTS and a specific listen IP. In
//     a pod it listens on 0.0.0.0, so probes must send Host: localhost;
//   - the page uses <base href="./"> and relative URLs only, so it works under
//     a path prefix;
//   - it serves an SSE stream, a WebSocket, a request echo, workspace file
//     upload and download, and a conversation log kept in the data directory
//     so that state visibly survives suspend and resume;
//   - it renders workspace files as pages under /view/, as an agent shows
//     the HTML it generated, scripts included: the hostile page the
//     gateway's origin isolation is tested against.
package agentapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/sandgate/sandgate/internal/defaults"
)

// ProbePath is the only path served without the auth cookie; kubelet
// readiness probes use it.
const ProbePath = "/favicon.svg"

// CookiePrefix starts the name of the auth cookie the token exchange sets;
// the rest of the name is a random per-process instance id.
const CookiePrefix = "dsh-auth-"

const (
	defaultEventInterval   = 200 * time.Millisecond
	defaultTickInterval    = 5 * time.Second
	defaultMaxUploadBytes  = 64 << 20
	defaultShutdownTimeout = 5 * time.Second
)

// Options configures an App. Start from Defaults.
type Options struct {
	// Stdout receives the container's standard output: the launch line with
	// the token and one access-log line per request. Nil discards it.
	Stdout io.Writer
	// Stderr receives warnings and lifecycle lines. Nil discards it.
	Stderr io.Writer
	// DataDir stands in for the sandbox's persistent volume. The
	// conversation log and the workspace live under it. Required.
	DataDir string
	// TokenFile, when set, is the absolute path where the app writes its
	// launch token (one line, mode 0600, replaced by a rename) before it
	// serves, as the seed proposes for DSH Web's --token-file.
	TokenFile string
	// NewToken returns the launch token of each App. Nil means 32 random
	// bytes in base64url, as DSH Web prints; tests pass other shapes.
	NewToken func() string
	// TrustedHosts lists the Host names accepted besides localhost,
	// 127.0.0.1 and the listen IP, like DSH_TRUSTED_HOSTS. A port, if given,
	// is ignored.
	TrustedHosts []string
	// EventInterval spaces the events of the SSE stream. Zero means 200ms.
	EventInterval time.Duration
	// TickInterval is how often each WebSocket receives a server-pushed
	// "tick <n>" message. Zero disables the pushes.
	TickInterval time.Duration
	// MaxUploadBytes caps one workspace upload. Zero means 64 MiB.
	MaxUploadBytes int64
	// ShutdownTimeout bounds the graceful shutdown once Serve's context
	// ends; connections still open after it are closed. Zero means 5s.
	ShutdownTimeout time.Duration
	// Now stamps events and messages. Nil means time.Now.
	Now func() time.Time
}

// Defaults returns the Options the demo uses, without a DataDir.
func Defaults() Options {
	return Options{
		EventInterval:   defaultEventInterval,
		TickInterval:    defaultTickInterval,
		MaxUploadBytes:  defaultMaxUploadBytes,
		ShutdownTimeout: defaultShutdownTimeout,
	}
}

// Validate reports every problem in o at once. It changes nothing.
func (o Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("data dir is required"))
	}
	if o.TokenFile != "" && !filepath.IsAbs(o.TokenFile) {
		errs = append(errs, fmt.Errorf("token file %q is not an absolute path", o.TokenFile))
	}
	for _, h := range o.TrustedHosts {
		if canonicalHost(h) == "" || strings.ContainsAny(h, " \t/") {
			errs = append(errs, fmt.Errorf("trusted host %q is not a host name", h))
		}
	}
	if o.EventInterval < 0 {
		errs = append(errs, errors.New("event interval is negative"))
	}
	if o.TickInterval < 0 {
		errs = append(errs, errors.New("tick interval is negative"))
	}
	if o.MaxUploadBytes < 0 {
		errs = append(errs, errors.New("max upload bytes is negative"))
	}
	if o.ShutdownTimeout < 0 {
		errs = append(errs, errors.New("shutdown timeout is negative"))
	}
	return errors.Join(errs...)
}

// App is one simulated DSH Web process. Its token, auth cookies and instance
// id live as long as the App, so a new App for the same DataDir behaves like
// a restarted container: same state on disk, new token, old cookies refused.
type App struct {
	opts Options
	con  *console

	token      string // launch token, printed once
	cookieName string // CookiePrefix + instance id
	cookieKey  []byte // signs auth cookie values
	trusted    map[string]bool

	upgrader websocket.Upgrader
	mux      *http.ServeMux
	started  atomic.Bool

	// Set by Serve before it accepts connections.
	data      *os.Root // DataDir
	workspace *os.Root // DataDir/workspace
	convo     *conversation
	streams   context.Context // ends when shutdown starts
	sockets   wsRegistry
}

// New returns an App for opts, with zero values filled in. Serve validates
// opts and starts it.
func New(opts Options) *App {
	defaults.Set(&opts.Stdout, io.Discard)
	defaults.Set(&opts.Stderr, io.Discard)
	defaults.Set(&opts.EventInterval, defaultEventInterval)
	defaults.Set(&opts.MaxUploadBytes, defaultMaxUploadBytes)
	defaults.Set(&opts.ShutdownTimeout, defaultShutdownTimeout)
	defaults.Clock(&opts.Now)
	if opts.NewToken == nil {
		opts.NewToken = newToken
	}
	a := &App{
		opts:       opts,
		con:        &console{out: opts.Stdout, err: opts.Stderr},
		token:      opts.NewToken(),
		cookieName: CookiePrefix + newInstanceID(),
		cookieKey:  randomBytes(32),
		trusted:    map[string]bool{"localhost": true, "127.0.0.1": true},
		upgrader:   websocket.Upgrader{},
	}
	for _, h := range opts.TrustedHosts {
		if c := canonicalHost(h); c != "" {
			a.trusted[c] = true
		}
	}
	a.mux = a.routes()
	return a
}

func (a *App) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+ProbePath, serveFavicon)
	mux.HandleFunc("GET /{$}", servePage)
	mux.HandleFunc("GET /assets/{name}", serveAsset)
	mux.HandleFunc("GET /api/events", a.serveEvents)
	mux.HandleFunc("GET /api/ws", a.serveWebSocket)
	mux.HandleFunc("/api/echo", serveEcho)
	mux.HandleFunc("/api/echo/", serveEcho)
	mux.HandleFunc("GET /api/messages", a.listMessages)
	mux.HandleFunc("POST /api/messages", a.postMessage)
	mux.HandleFunc("GET /api/files/{name...}", withFileName(a.downloadFile))
	mux.HandleFunc("PUT /api/files/{name...}", withFileName(a.uploadFile))
	mux.HandleFunc("GET /view/{name...}", withFileName(a.viewFile))
	return mux
}

// serveHTTP runs every request through the same stages as DSH Web: Host
// check, launch-token exchange, cookie auth, then the route.
func (a *App) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.trusted[canonicalHost(r.Host)] {
		http.Error(w, "invalid host", http.StatusBadRequest)
		return
	}
	if r.URL.Path == "/" && r.URL.Query().Has("token") {
		a.exchangeToken(w, r)
		return
	}
	if r.URL.Path != ProbePath && !a.authorized(r) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	a.mux.ServeHTTP(w, r)
}

// Serve writes the token file if configured, prints the launch line and
// serves HTTP on ln until ctx ends, then shuts down: SSE streams end,
// WebSockets get close 1001, and in-flight requests get up to
// ShutdownTimeout. It closes ln. Serve may be called once;
// it returns nil after a clean shutdown.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	if !a.started.CompareAndSwap(false, true) {
		ln.Close()
		return errors.New("agentapp: Serve called twice")
	}
	if err := a.opts.Validate(); err != nil {
		ln.Close()
		return fmt.Errorf("validate options: %w", err)
	}
	if err := a.openData(); err != nil {
		ln.Close()
		return err
	}
	defer a.data.Close()
	defer a.workspace.Close()
	if err := a.writeTokenFile(); err != nil {
		ln.Close()
		return err
	}
	if ip := listenIP(ln.Addr()); ip != "" {
		a.trusted[ip] = true
	}

	streams, stopStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStreams()
	a.streams = streams
	srv := &http.Server{
		Handler:           accessLog(a.con, http.HandlerFunc(a.serveHTTP)),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(stderrWriter{a.con}, "dsh web: http: ", 0),
	}

	a.con.errf("dsh web: warning: permission mode danger-full-access, file sandbox disabled")
	a.con.errf("dsh web: trusted hosts: %s", strings.Join(a.trustedList(), ", "))
	a.con.outf("dsh web: data dir %s, %d messages in conversation log", a.opts.DataDir, a.convo.len())
	a.con.outf("dsh web: listening on http://%s/?token=%s", ln.Addr(), a.token)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		stopStreams()
		a.sockets.closeAll()
		srv.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	a.con.errf("dsh web: shutting down")
	stopStreams()
	a.sockets.closeAll()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.opts.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		srv.Close()
	}
	<-served
	if err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	a.con.errf("dsh web: stopped")
	return nil
}

// openData creates DataDir and its workspace and loads the conversation log.
func (a *App) openData() error {
	ws := filepath.Join(a.opts.DataDir, workspaceDir)
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return fmt.Errorf("create workspace: %w", err)
	}
	data, err := os.OpenRoot(a.opts.DataDir)
	if err != nil {
		return fmt.Errorf("open data dir: %w", err)
	}
	workspace, err := data.OpenRoot(workspaceDir)
	if err != nil {
		data.Close()
		return fmt.Errorf("open workspace: %w", err)
	}
	convo, err := loadConversation(data, a.con)
	if err != nil {
		workspace.Close()
		data.Close()
		return fmt.Errorf("load conversation: %w", err)
	}
	a.data, a.workspace, a.convo = data, workspace, convo
	return nil
}
