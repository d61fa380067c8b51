package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/connlimit"
	"github.com/sandgate/sandgate/internal/deadlineconn"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/requestpath/headerrule"
)

// Proxy serves the egress listener. Build it with New, run it with Serve.
type Proxy struct {
	opts      Options
	log       *slog.Logger
	audit     *slog.Logger
	m         *metrics
	providers map[string]*upstream
	keys      *keyStore
	limits    *limitSource
	budgets   *budgets
	conns     *connlimit.Limit
	warnings  *warnLimit
}

// upstream is one provider with its client, built once.
type upstream struct {
	Provider
	client   *fasthttp.HostClient
	host     string
	basePath string
	// toProvider is the rule of the sandbox's request headers sent on.
	toProvider *headerrule.Rule
}

// New fills defaults and builds the providers' clients. Its settings must
// be valid (ParseProviders and the loader's checks); New refuses only
// missing collaborators.
func New(o Options) (*Proxy, error) {
	if err := o.missing(); err != nil {
		return nil, fmt.Errorf("egress options: %w", err)
	}
	o = o.withDefaults()
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	log := o.Logger.With("component", "egress")
	p := &Proxy{
		opts: o, log: log, m: m,
		audit:     o.Audit.With("log", "audit", "component", "egress"),
		providers: make(map[string]*upstream, len(o.Providers)),
		keys:      &keyStore{dir: filepath.Clean(o.KeysDir), files: newFileCache(maxKeyFileBytes)},
		limits:    &limitSource{path: o.LimitsFile, base: o.Default, files: newFileCache(maxLimitsFileBytes), log: log},
		budgets:   newBudgets(o.Now, o.CallsInFlight),
		conns:     connlimit.New(connlimit.Options{Max: o.MaxConnsPerClient, Key: connlimit.Address}),
		warnings:  newWarnLimit(o.Now, time.Minute),
	}
	for _, pr := range o.Providers {
		u, _ := pr.upstream() // validated
		addr := u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
		}
		p.providers[pr.Name] = &upstream{
			Provider: pr, host: u.Host, basePath: u.Path,
			toProvider: headerrule.New(headerrule.Spec{Allow: append([]string{"Content-Type", "Accept"}, pr.Headers...)}),
			client: &fasthttp.HostClient{
				Addr: addr, IsTLS: u.Scheme == "https",
				TLSConfig:                &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12},
				Dial:                     p.dial,
				StreamResponseBody:       true,
				NoDefaultUserAgentHeader: true,
				DisablePathNormalizing:   true,
				MaxIdleConnDuration:      30 * time.Second,
				MaxConns:                 4096,
				WriteTimeout:             o.HeaderTimeout,
			},
		}
	}
	return p, nil
}

// dial connects to a provider; reads must make progress within
// UpstreamIdle, so a long token stream lives as long as it keeps talking.
func (p *Proxy) dial(addr string) (net.Conn, error) {
	var (
		c   net.Conn
		err error
	)
	if p.opts.Dial != nil {
		c, err = p.opts.Dial(addr)
	} else {
		c, err = net.DialTimeout("tcp", addr, DefaultDialTimeout)
	}
	if err != nil {
		return nil, err
	}
	return deadlineconn.New(c, p.opts.UpstreamIdle, 0), nil
}

// Handler is the request handler, for tests and benchmarks that run their
// own server.
func (p *Proxy) Handler() fasthttp.RequestHandler { return p.serve }

// Serve serves on ln until ctx ends, then stops taking calls and lets the
// open ones (token streams) finish for up to DrainTimeout. Each sandbox
// address holds at most MaxConnsPerClient connections: past that a new
// one is closed as soon as it is accepted.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	s := &fasthttp.Server{
		Handler:                      p.serve,
		ErrorHandler:                 p.serveError,
		NoDefaultServerHeader:        true,
		NoDefaultDate:                true,
		NoDefaultContentType:         true,
		ReadTimeout:                  p.opts.HeaderTimeout,
		IdleTimeout:                  p.opts.IdleTimeout,
		MaxRequestBodySize:           p.opts.MaxBodyBytes,
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		SecureErrorLogMessage:        true,
		MaxIdleWorkerDuration:        time.Second,
		TCPKeepalive:                 true,
		Logger:                       serverLogger{p.log},
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(writeDeadlines{p.conns.Listener(ln), p.opts.WriteTimeout}) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve egress: %w", err)
	case <-ctx.Done():
	}
	dctx, cancel := context.WithTimeout(context.Background(), p.opts.DrainTimeout)
	defer cancel()
	if err := s.ShutdownWithContext(dctx); err != nil {
		p.log.Warn("egress calls still open after the drain", "err", err)
	}
	<-errc
	return nil
}

// writeDeadlines gives each Write on an accepted connection its own
// deadline: a sandbox that stops reading is dropped after the timeout
// (the write fails, the call ends as aborted), while a long stream that
// keeps moving is not cut off.
type writeDeadlines struct {
	net.Listener
	timeout time.Duration
}

func (l writeDeadlines) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return deadlineconn.New(c, 0, l.timeout), nil
}

// serveError answers what fasthttp refused before the handler: a body
// past MaxBodyBytes, a malformed or slow request.
func (p *Proxy) serveError(ctx *fasthttp.RequestCtx, err error) {
	status := fasthttp.StatusBadRequest
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		status = fasthttp.StatusRequestEntityTooLarge
	}
	ctx.Error(fasthttp.StatusMessage(status), status)
	p.log.Debug("egress request refused by the server", "client", ctx.RemoteIP().String(), "status", status)
}

// call is one egress call: what the stages learned, turned into metrics
// and one audit line by finish.
type call struct {
	start      time.Time
	client     string
	caller     informer.Caller
	provider   string
	path       string
	kind       kind
	status     int
	outcome    string
	ownKey     bool
	key        []byte
	body       []byte // the body sent on, for a POST
	admitted   bool   // holds one of the user's calls in flight
	grant      grant  // its reservation, when admitted
	answered   bool   // the provider's response arrived
	limits     Limits
	usage      TokenUsage
	retryAfter time.Duration
	finished   bool      // finish has run
	busyUntil  time.Time // a busy declaration's end, for its audit line
	busy       bool      // a busy declaration, not a model call
}

// charge is what the call costs its user's day: the usage the provider
// reported for a response that arrived whole; nothing when the provider
// never answered, or refused the call without reporting usage; otherwise
// (cut off, or whole without usage) its reservation, or the usage seen if
// that is more.
func (c *call) charge() int64 {
	switch {
	case !c.answered:
		return 0
	case c.outcome == outcomeOK && (c.usage != TokenUsage{} || c.status >= 400):
		return c.usage.Total
	}
	return max(c.grant.reserve, c.usage.Total)
}

// serve runs caller -> route -> key and body -> budget -> upstream ->
// respond. It is the one place a call is served, so it recovers a panic:
// fasthttp does not, and one call must not take the node proxy down.
func (p *Proxy) serve(ctx *fasthttp.RequestCtx) {
	c := &call{start: time.Now(), client: ctx.RemoteIP().String(), status: fasthttp.StatusOK, outcome: outcomeOK}
	defer func() {
		if r := recover(); r != nil {
			p.recovered(ctx, c, r)
		}
	}()
	if string(ctx.Path()) == busyPath {
		p.serveBusy(ctx, c)
		return
	}
	up, err := p.route(ctx, c)
	if err == nil {
		err = p.prepare(ctx, c, up)
	}
	if err == nil {
		err = p.admit(c)
	}
	if err == nil {
		var resp *fasthttp.Response
		if resp, err = p.forward(ctx, c, up); err == nil {
			p.respond(ctx, c, up, resp)
			return
		}
	}
	p.refuse(ctx, c, err)
	p.finish(c)
}

// recovered answers a call whose handler panicked with 500. The log names
// the runtime error (or only the panic value's type, which could hold a
// body) and the stack.
func (p *Proxy) recovered(ctx *fasthttp.RequestCtx, c *call, r any) {
	ctx.Response.Reset()
	p.refuse(ctx, c, panicError(r))
	if !c.finished {
		p.finish(c)
	}
}

// panicError names a recovered panic by its runtime error, or only by its
// value's type, which could hold a body, and carries the stack.
func panicError(r any) error {
	what := fmt.Sprintf("%T", r)
	if e, ok := r.(runtime.Error); ok {
		what = e.Error()
	}
	return fmt.Errorf("%w: %s\n%s", errPanic, what, debug.Stack())
}

// Refusals, mapped to statuses by refuse. errBadBody and errStoredState
// come in a *refusal, whose message the sandbox gets.
var (
	errBadMethod   = errors.New("method not allowed")
	errBadPath     = errors.New("path not allowed")
	errBadBody     = errors.New("request body refused")
	errStoredState = errors.New("stored state on the shared key")
	errOverBudget  = errors.New("budget spent")
	errUpstream    = errors.New("provider unreachable")
	errPanic       = errors.New("handler panicked")
	errBadBusy     = errors.New("busy declaration refused")
)

// route identifies the caller, the provider and path, and checks the
// method is the one the path takes.
func (p *Proxy) route(ctx *fasthttp.RequestCtx, c *call) (*upstream, error) {
	caller, err := p.opts.Callers.ByIP(c.client)
	if err != nil {
		return nil, err
	}
	c.caller = caller
	raw := string(ctx.Request.URI().PathOriginal())
	name, rest, _ := strings.Cut(strings.TrimPrefix(raw, "/"), "/")
	up := p.providers[name]
	if up == nil {
		return nil, fmt.Errorf("%w: no provider %q", errBadPath, name)
	}
	c.provider, c.path = name, "/"+rest
	if c.kind = up.allows(c.path); strings.Contains(raw, "%") || c.kind == kindNone {
		return nil, fmt.Errorf("%w: %s", errBadPath, c.path)
	}
	if m := string(ctx.Method()); m != c.kind.method() {
		return nil, fmt.Errorf("%w: %s %s", errBadMethod, m, c.path)
	}
	return up, nil
}

// prepare finds the key and checks the body against it (request.go).
func (p *Proxy) prepare(ctx *fasthttp.RequestCtx, c *call, up *upstream) error {
	key, own, err := p.keys.key(&up.Provider, c.caller.User)
	if err != nil {
		return err
	}
	c.key, c.ownKey = key, own
	if c.kind.method() != "POST" {
		return nil
	}
	r, err := prepare(ctx.PostBody(), c.path, c.kind, up, own)
	if err != nil {
		return err
	}
	c.body, c.grant.reserve = r.body, r.reserve
	return nil
}

// admit takes the call and its reservation from the caller's budget:
// the limits file's (or the default), unless an admin set the user's
// tokens per day on the claim.
func (p *Proxy) admit(c *call) error {
	c.limits = p.limits.forUser(c.caller.User)
	if n := c.caller.TokensPerDay; n != nil {
		c.limits.TokensPerDay = *n
	}
	g, why, after := p.budgets.admit(c.caller.User, c.limits, c.grant.reserve)
	if why != "" {
		c.retryAfter = after
		return fmt.Errorf("%w: %s", errOverBudget, why)
	}
	c.grant, c.admitted = g, true
	if p.opts.Activity != nil {
		p.opts.Activity.BeginModelCall(p.activityKey(c))
	}
	return nil
}

// activityKey names the caller's sandbox for the activity table.
func (p *Proxy) activityKey(c *call) activity.Key {
	return activity.Key{Namespace: p.opts.Namespace, Name: c.caller.Sandbox}
}

// forward sends the call on with only the allowed headers and the real key.
func (p *Proxy) forward(ctx *fasthttp.RequestCtx, c *call, up *upstream) (*fasthttp.Response, error) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.DisableNormalizing()
	req.Header.SetMethodBytes(ctx.Method())
	uri := up.basePath + c.path
	if q := ctx.Request.URI().QueryString(); len(q) > 0 {
		uri += "?" + string(q)
	}
	req.SetRequestURI(uri)
	req.Header.SetHost(up.host)
	up.toProvider.CopyRequest(&req.Header, &ctx.Request.Header)
	req.Header.Set(up.Header, up.Prefix+string(c.key))
	if c.body != nil {
		req.Header.SetContentType("application/json")
		req.SetBody(c.body)
	}
	resp := fasthttp.AcquireResponse()
	sent := time.Now()
	if err := up.client.Do(req, resp); err != nil {
		fasthttp.ReleaseResponse(resp)
		return nil, fmt.Errorf("%w: %w", errUpstream, err)
	}
	p.m.upstream.WithLabelValues(up.Name).Observe(time.Since(sent).Seconds())
	return resp, nil
}

// refuse answers a call that did not reach the provider, in the one place
// that maps errors to statuses.
func (p *Proxy) refuse(ctx *fasthttp.RequestCtx, c *call, err error) {
	status, outcome, msg := fasthttp.StatusBadGateway, outcomeUpstreamError, "provider unreachable"
	switch {
	case errors.Is(err, informer.ErrUnknownCaller):
		status, outcome, msg = fasthttp.StatusForbidden, outcomeUnknownCaller, "not a sandbox on this node"
	case errors.Is(err, informer.ErrNotSynced):
		status, outcome, msg = fasthttp.StatusServiceUnavailable, outcomeStarting, "node proxy starting, retry shortly"
		ctx.Response.Header.Set("Retry-After", "1")
	case errors.Is(err, errBadMethod):
		status, outcome, msg = fasthttp.StatusMethodNotAllowed, outcomeBadPath, "method not allowed"
	case errors.Is(err, errBadPath):
		status, outcome, msg = fasthttp.StatusNotFound, outcomeBadPath, "path not allowed"
	case errors.Is(err, errBadBody), errors.Is(err, errBadBusy):
		status, outcome, msg = fasthttp.StatusBadRequest, outcomeBadBody, err.Error()
	case errors.Is(err, errStoredState):
		status, outcome, msg = fasthttp.StatusForbidden, outcomeStoredState, err.Error()
	case errors.Is(err, errOverBudget):
		status, outcome, msg = fasthttp.StatusTooManyRequests, outcomeOverBudget, "budget spent"
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(max(1, int((c.retryAfter+time.Second-1)/time.Second))))
	case errors.Is(err, ErrNoKey):
		status, outcome, msg = fasthttp.StatusServiceUnavailable, outcomeNoKey, "provider key not configured"
	case errors.Is(err, errUpstream):
	case errors.Is(err, errPanic):
		status, outcome, msg = fasthttp.StatusInternalServerError, outcomePanic, "internal error"
	default:
		status, outcome, msg = fasthttp.StatusInternalServerError, outcomeUpstreamError, "internal error"
	}
	c.status, c.outcome = status, outcome
	switch {
	case outcome == outcomeUnknownCaller:
		if ok, suppressed := p.warnings.allow(c.client); ok {
			p.log.Warn("egress call refused", "client", c.client, "status", status, "err", err, "suppressed", suppressed)
		}
	case status >= 500 && outcome != outcomeStarting:
		p.log.Warn("egress call refused", "client", c.client, "user", c.caller.User, "provider", c.provider, "status", status, "err", err)
	}
	if closesConnection(status) {
		ctx.SetConnectionClose()
	}
	ctx.Response.Header.SetContentType("application/json")
	ctx.SetStatusCode(status)
	b := appendString(append(make([]byte, 0, 128), `{"error":{"message":`...), msg)
	ctx.Write(append(b, `,"type":"sandgate_egress"}}`...))
}

// closesConnection reports the refusals after which the connection is
// closed: a caller that is no sandbox here, or a call no client of a
// provider would send, gets no kept-alive connection to send more on.
func closesConnection(status int) bool {
	switch status {
	case fasthttp.StatusBadRequest, fasthttp.StatusForbidden, fasthttp.StatusNotFound, fasthttp.StatusMethodNotAllowed:
		return true
	}
	return false
}

// finish records a call once it is over: its charge, metrics and one
// audit line.
func (p *Proxy) finish(c *call) {
	c.finished = true
	charged := int64(0)
	if c.admitted {
		charged = c.charge()
		p.budgets.settle(c.caller.User, c.grant, charged, c.limits)
		if p.opts.Activity != nil {
			k := p.activityKey(c)
			u := p.budgets.usage(c.caller.User)
			p.opts.Activity.ModelTokens(k, u.Day, u.Tokens)
			p.opts.Activity.EndModelCall(k)
		}
	}
	name := c.provider
	if name == "" || c.outcome == outcomeUnknownCaller {
		name = "none"
	}
	p.m.requests.WithLabelValues(name, c.outcome).Inc()
	if c.usage.Prompt > 0 {
		p.m.tokens.WithLabelValues(name, "prompt").Add(float64(c.usage.Prompt))
	}
	if c.usage.Completion > 0 {
		p.m.tokens.WithLabelValues(name, "completion").Add(float64(c.usage.Completion))
	}
	action := "egress"
	if c.busy {
		action = "busy"
	}
	attrs := []any{"action", action, "user", c.caller.User, "client", c.client, "provider", c.provider,
		"path", c.path, "status", c.status, "outcome", c.outcome,
		"duration_ms", time.Since(c.start).Milliseconds()}
	switch {
	case c.busy && c.outcome == outcomeOK && c.busyUntil.IsZero():
		attrs = append(attrs, "sandbox", c.caller.Sandbox, "pod", c.caller.Pod, "busy", "done")
	case c.busy && c.outcome == outcomeOK:
		attrs = append(attrs, "sandbox", c.caller.Sandbox, "pod", c.caller.Pod, "busy_until", c.busyUntil.UTC())
	case c.busy:
	case c.caller.User != "":
		today := p.budgets.usage(c.caller.User)
		attrs = append(attrs, "sandbox", c.caller.Sandbox, "pod", c.caller.Pod,
			"prompt_tokens", c.usage.Prompt, "completion_tokens", c.usage.Completion, "total_tokens", c.usage.Total,
			"reserved_tokens", c.grant.reserve, "charged_tokens", charged, "tokens_today", today.Tokens, "requests_today", today.Requests)
	}
	if c.provider != "" && c.outcome == outcomeOK || c.outcome == outcomeAborted {
		attrs = append(attrs, "key", map[bool]string{true: "user", false: "shared"}[c.ownKey])
	}
	p.audit.Info("audit", attrs...)
}
