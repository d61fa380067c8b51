package authapi

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// Server is one auth API replica. Any number of replicas may serve at once:
// they share the signing Secret and read accounts from their own claim
// informers; none holds session state.
type Server struct {
	opts     Options
	log      *slog.Logger
	audit    *slog.Logger
	keys     *keyStore
	claims   *claimStore
	reserved *reservations // user names held through a recreate
	verifier *jwt.Verifier
	// originVerifier and entryVerifier check origin sessions and entry
	// codes (subdomain routing).
	originVerifier, entryVerifier *jwt.Verifier
	// replicaVerifier checks other replicas' tokens (replicaCall).
	replicaVerifier *jwt.Verifier
	limiter         *limiter
	guard           *guard
	pages           *pages
	// recent keeps each account's last audit events for the admin page.
	recent *recentEvents
	// dummy is compared against when a login names no usable account, so
	// that path does the same work as a wrong token.
	dummy account.Account
	// onCompare, when set (tests), runs at every token comparison.
	onCompare func()

	public   http.Handler
	internal *http.ServeMux
	ready    atomic.Bool
}

// New validates opts, fills defaults and returns a Server; Run starts it.
func New(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	s := &Server{
		opts:    opts,
		log:     opts.Logger.With("component", "authapi"),
		audit:   auditLogger(opts),
		limiter: newLimiter(opts.RateLimit, opts.RateWindow, opts.Now),
		guard:   newGuard(opts),
		recent:  newRecentEvents(),
	}
	s.keys = newKeyStore(opts)
	s.claims = newClaimStore(opts)
	s.reserved = newReservations(opts)
	v, err := jwt.NewVerifier(jwt.VerifierOptions{
		Keys: s.keys, Issuer: opts.Issuer, Audience: opts.Audience, Leeway: jwtLeeway, Now: opts.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("authapi: %w", err)
	}
	s.verifier = v
	if s.originVerifier, err = jwt.NewVerifier(jwt.VerifierOptions{
		Keys: s.keys, Issuer: opts.Issuer, Audience: jwt.OriginAudience(opts.Audience), Leeway: jwtLeeway, Now: opts.Now,
	}); err != nil {
		return nil, fmt.Errorf("authapi: %w", err)
	}
	if s.entryVerifier, err = jwt.NewVerifier(jwt.VerifierOptions{
		Keys: s.keys, Issuer: opts.Issuer, Audience: jwt.EntryAudience(opts.Audience), Leeway: entryLeeway, Now: opts.Now,
	}); err != nil {
		return nil, fmt.Errorf("authapi: %w", err)
	}
	if s.replicaVerifier, err = jwt.NewVerifier(jwt.VerifierOptions{
		Keys: s.keys, Issuer: opts.Issuer, Audience: jwt.ReplicaAudience(opts.Audience), Leeway: entryLeeway, Now: opts.Now,
	}); err != nil {
		return nil, fmt.Errorf("authapi: %w", err)
	}
	if s.pages, err = loadPages(s.formTargets()...); err != nil {
		return nil, fmt.Errorf("authapi: %w", err)
	}
	rand.Read(s.dummy.TokenHash[:])
	s.routes()
	return s, nil
}

// routes lays out the public and internal endpoints.
func (s *Server) routes() {
	pub := http.NewServeMux()
	pub.Handle("GET /{$}", s.route("landing", s.handleLanding))
	pub.Handle("GET /.well-known/jwks.json", s.route("jwks", s.handleJWKS))
	pub.Handle("POST /users", s.route("signup", s.limited(s.handleSignup)))
	pub.Handle("POST /login", s.route("login", s.limited(s.handleLogin)))
	pub.Handle("POST /logout", s.route("logout", s.handleLogout))
	pub.Handle("GET /recreate", s.route("recreate_confirm", s.handleRecreateConfirm))
	pub.Handle("POST /recreate", s.route("recreate", s.handleRecreate))
	pub.Handle("DELETE /users/{user}", s.route("delete", s.handleDelete))
	pub.Handle("GET /users/{user}/delete", s.route("delete_confirm", s.handleDeleteConfirm))
	pub.Handle("POST /users/{user}/delete", s.route("delete", s.handleDelete))
	pub.Handle("POST /users/{user}/token", s.route("rotate", s.handleRotate))
	pub.Handle("GET /users/{user}/token", s.route("token_view", s.handleTokenView))
	pub.Handle("POST /users/{user}/logout", s.route("logout_everywhere", s.handleLogoutEverywhere))
	pub.Handle("POST /users/{user}/keep-awake", s.route("keep_awake", s.handleKeepAwake))
	pub.Handle("POST /users/{user}/suspend", s.route("suspend_now", s.handleSuspendNow))
	pub.Handle("POST /users/{user}/wake-schedule", s.route("wake_schedule", s.handleWakeSchedule))
	pub.Handle("GET /admin", s.route("admin_home", s.handleAdminHome))
	pub.Handle("GET /admin/accounts", s.route("admin_list", s.handleAdminList))
	pub.Handle("GET /admin/accounts/{user}", s.route("admin_account", s.handleAdminAccount))
	for name := range adminActions {
		pub.Handle("POST /admin/accounts/{user}/"+name, s.route("admin_"+name, s.handleAdminAction(name)))
	}
	if s.opts.RoutingMode == userorigin.Subdomain {
		pub.Handle("GET /u/{user}", s.route("enter", s.handleUserPath))
		pub.Handle("GET /u/{user}/{rest...}", s.route("enter", s.handleUserPath))
	}
	s.public = s.notFoundPage(pub)

	in := http.NewServeMux()
	in.Handle("GET /.well-known/jwks.json", s.route("jwks", s.handleJWKS))
	in.Handle("POST /internal/v1/sessions/renew", s.route("renew", s.guard.wrap(s, http.HandlerFunc(s.handleRenew)).ServeHTTP))
	in.Handle("POST /internal/v1/wake", s.route("wake", s.guard.wrap(s, http.HandlerFunc(s.handleWake)).ServeHTTP))
	if s.opts.RoutingMode == userorigin.Subdomain {
		in.Handle("POST /internal/v1/origin/redeem", s.route("redeem", s.guard.wrap(s, http.HandlerFunc(s.handleRedeem)).ServeHTTP))
	}
	if s.opts.Activity != nil {
		in.Handle("POST "+accountFactsPath, s.route("account_facts", s.handleAccountFacts))
		in.Handle("POST /internal/v1/activity", s.route("activity", s.guard.wrap(s, http.HandlerFunc(s.handleActivity)).ServeHTTP))
	}
	s.internal = in
}

// HandleInternal adds an internal route (pattern as for http.ServeMux,
// under /internal/) that only ServiceAccounts admitted by the TokenReview
// guard reach; Caller tells the handler which one called. Call it before
// serving.
func (s *Server) HandleInternal(pattern, route string, h http.Handler) {
	s.internal.Handle(pattern, s.route(route, s.guard.wrap(s, h).ServeHTTP))
}

// Public serves the browser- and client-facing API.
func (s *Server) Public() http.Handler { return s.public }

// Internal serves the routes for node proxies (and the JWKS).
func (s *Server) Internal() http.Handler { return s.internal }

// Handler serves both on one listener: /internal/ goes to Internal, the
// rest to Public.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/internal/", s.internal)
	mux.Handle("/", s.public)
	return mux
}

// Ready reports whether the keys are loaded and the informers synced.
func (s *Server) Ready() bool { return s.ready.Load() }

// ShuttingDown cuts short, now and from now on, the waits for a sandbox to
// be Ready: a signup or recreate in flight answers at once that it still
// wakes (202, or its token page), within the shutdown's grace period.
// Call it when the listeners begin to shut down; Run's informers must
// keep running until the requests have drained.
func (s *Server) ShuttingDown() { s.claims.endShutdown() }

// Run loads (or creates) the signing keys, starts the claim and key
// informers and key rotation, and blocks until ctx ends; everything it
// started has stopped when it returns.
func (s *Server) Run(ctx context.Context) error {
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, 10*time.Second) {
		err := s.keys.ensure(ctx)
		if err == nil {
			break
		}
		s.log.Warn("load signing keys", "error", err, "retry_in_ms", wait.Milliseconds())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.claims.informer.RunWithContext(ctx) })
	wg.Go(func() { s.keys.run(ctx) })
	defer wg.Wait()
	if !cache.WaitForCacheSync(ctx.Done(), s.claims.informer.HasSynced, s.keys.informer.HasSynced) {
		return ctx.Err()
	}
	s.ready.Store(true)
	s.log.Info("ready")
	<-ctx.Done()
	s.ready.Store(false)
	return nil
}

// handleJWKS serves the public keys node proxies verify with.
func (s *Server) handleJWKS(w http.ResponseWriter, r *http.Request) {
	data, err := s.keys.jwks()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=60")
	_, _ = w.Write(data)
}

// routeKey is the context key of the route name.
type routeKey struct{}

func routeOf(r *http.Request) string {
	name, _ := r.Context().Value(routeKey{}).(string)
	return name
}

// route names a handler for metrics and the access log, which it writes
// once per request after the response, and answers 503 until Ready.
func (s *Server) route(name string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, code: http.StatusOK}
		r = r.WithContext(context.WithValue(r.Context(), routeKey{}, name))
		r, ev := withAudit(r, name)
		if s.ready.Load() {
			h(rec, r)
		} else {
			s.fail(rec, r, withRetryAfter(ErrUnavailable, time.Second))
		}
		if ev != nil {
			s.writeAudit(r, name, ev, rec.code)
		}
		d := time.Since(start)
		s.opts.Metrics.Requests.WithLabelValues(name, fmt.Sprintf("%dxx", rec.code/100)).Inc()
		s.opts.Metrics.Duration.WithLabelValues(name).Observe(d.Seconds())
		s.log.Info("request", "route", name, "method", r.Method, "path", r.URL.Path, "status", rec.code,
			"duration_ms", d.Milliseconds(), "bytes", rec.bytes, "client", clientAddr(r, s.opts.TrustedProxies).String())
	})
}

// recorder captures the status and size of a response.
type recorder struct {
	http.ResponseWriter
	code    int
	bytes   int
	written bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.written {
		r.code, r.written = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.written = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
