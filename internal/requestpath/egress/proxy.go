package egress

import (
	"bytes"
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

	"github.com/sandgate/sandgate/internal/deadlineconn"
	"github.com/sandgate/sandgate/internal/informer"
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
}

// upstream is one provider with its client, built once.
type upstream struct {
	Provider
	client   *fasthttp.HostClient
	host     string
	basePath string
	forward  []string // request headers sent on
}

// New validates o and builds the providers' clients.
func New(o Options) (*Proxy, error) {
	if err := o.Validate(); err != nil {
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
	}
	for _, pr := range o.Providers {
		u, _ := pr.upstream() // validated
		addr := u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
		}
		p.providers[pr.Name] = &upstream{
			Provider: pr, host: u.Host, basePath: u.Path,
			forward: append([]string{"Content-Type", "Accept"}, pr.Headers...),
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
// open ones (token streams) finish for up to DrainTimeout.
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
		Logger:                       serverLogger{p.log},
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(writeDeadlines{ln, p.opts.WriteTimeout}) }()
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
	status     int
	outcome    string
	ownKey     bool
	admitted   bool // holds one of the user's calls in flight
	limits     Limits
	usage      TokenUsage
	retryAfter time.Duration
	finished   bool // finish has run
}

// serve runs caller -> route -> budget -> key -> upstream -> respond. It
// is the one place a call is served, so it recovers a panic: fasthttp
// does not, and one call must not take the node proxy down.
func (p *Proxy) serve(ctx *fasthttp.RequestCtx) {
	c := &call{start: time.Now(), client: ctx.RemoteIP().String(), status: fasthttp.StatusOK, outcome: outcomeOK}
	defer func() {
		if r := recover(); r != nil {
			p.recovered(ctx, c, r)
		}
	}()
	up, err := p.route(ctx, c)
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

// Refusals, mapped to statuses by refuse.
var (
	errBadMethod  = errors.New("method not allowed")
	errBadPath    = errors.New("path not allowed")
	errOverBudget = errors.New("budget spent")
	errUpstream   = errors.New("provider unreachable")
	errPanic      = errors.New("handler panicked")
)

// route identifies the caller, the provider and path, and takes the call
// from the caller's budget.
func (p *Proxy) route(ctx *fasthttp.RequestCtx, c *call) (*upstream, error) {
	caller, err := p.opts.Callers.ByIP(c.client)
	if err != nil {
		return nil, err
	}
	c.caller = caller
	if !ctx.IsPost() && !ctx.IsGet() {
		return nil, errBadMethod
	}
	raw := string(ctx.Request.URI().PathOriginal())
	name, rest, _ := strings.Cut(strings.TrimPrefix(raw, "/"), "/")
	up := p.providers[name]
	if up == nil {
		return nil, fmt.Errorf("%w: no provider %q", errBadPath, name)
	}
	c.provider, c.path = name, "/"+rest
	if strings.Contains(raw, "%") || !up.allows(c.path) {
		return nil, fmt.Errorf("%w: %s", errBadPath, c.path)
	}
	c.limits = p.limits.forUser(caller.User)
	if why, after := p.budgets.admit(caller.User, c.limits); why != "" {
		c.retryAfter = after
		return nil, fmt.Errorf("%w: %s", errOverBudget, why)
	}
	c.admitted = true
	return up, nil
}

// forward sends the call on with only the allowed headers and the real key.
func (p *Proxy) forward(ctx *fasthttp.RequestCtx, c *call, up *upstream) (*fasthttp.Response, error) {
	key, own, err := p.keys.key(&up.Provider, c.caller.User)
	if err != nil {
		return nil, err
	}
	c.ownKey = own
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
	for _, h := range up.forward {
		if v := ctx.Request.Header.Peek(h); len(v) > 0 {
			req.Header.SetBytesV(h, v)
		}
	}
	req.Header.Set(up.Header, up.Prefix+string(key))
	if ctx.IsPost() {
		body := ctx.PostBody()
		if definesStreamUsage(c.path) {
			body = withStreamUsage(body)
		}
		req.SetBody(body)
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
	if (status >= 500 && outcome != outcomeStarting) || status == fasthttp.StatusForbidden {
		p.log.Warn("egress call refused", "client", c.client, "user", c.caller.User, "provider", c.provider, "status", status, "err", err)
	}
	ctx.Response.Header.SetContentType("application/json")
	ctx.SetStatusCode(status)
	fmt.Fprintf(ctx, `{"error":{"message":%q,"type":"sandgate_egress"}}`, msg)
}

// finish records a call once it is over: metrics and one audit line.
func (p *Proxy) finish(c *call) {
	c.finished = true
	if c.admitted {
		p.budgets.release(c.caller.User)
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
	attrs := []any{"action", "egress", "user", c.caller.User, "client", c.client, "provider", c.provider,
		"path", c.path, "status", c.status, "outcome", c.outcome,
		"duration_ms", time.Since(c.start).Milliseconds()}
	if c.caller.User != "" {
		today := p.budgets.usage(c.caller.User)
		attrs = append(attrs, "sandbox", c.caller.Sandbox, "pod", c.caller.Pod,
			"prompt_tokens", c.usage.Prompt, "completion_tokens", c.usage.Completion, "total_tokens", c.usage.Total,
			"tokens_today", today.Tokens, "requests_today", today.Requests)
	}
	if c.provider != "" && c.outcome == outcomeOK || c.outcome == outcomeAborted {
		attrs = append(attrs, "key", map[bool]string{true: "user", false: "shared"}[c.ownKey])
	}
	p.audit.Info("audit", attrs...)
}

// passHeader reports response headers passed back to the sandbox: the
// body's type, the provider's request id, processing time and API version,
// rate-limit and retry hints. Nothing that names the key's account
// (openai-organization, openai-project, anthropic-organization-id).
func passHeader(k []byte) bool {
	h := strings.ToLower(string(k))
	switch h {
	case "content-type", "cache-control", "retry-after", "x-request-id", "request-id",
		"openai-processing-ms", "openai-version":
		return true
	}
	return strings.HasPrefix(h, "x-ratelimit-") || strings.HasPrefix(h, "anthropic-ratelimit-")
}

var eventStream = []byte("text/event-stream")

// respond passes the provider's status and body on as it arrives: a body
// of unknown length goes out chunked with the headers flushed first, so
// each event reaches the sandbox without waiting for more.
func (p *Proxy) respond(ctx *fasthttp.RequestCtx, c *call, up *upstream, resp *fasthttp.Response) {
	c.status = resp.StatusCode()
	ctx.SetStatusCode(c.status)
	for k, v := range resp.Header.All() {
		if passHeader(k) {
			ctx.Response.Header.SetBytesKV(k, v)
		}
	}
	b := &respBody{p: p, c: c, resp: resp,
		m: meter{sse: bytes.HasPrefix(resp.Header.ContentType(), eventStream), maxDoc: maxUsageDocumentBytes}}
	src, _ := resp.BodyStream().(fasthttp.ReadCloserWithError)
	cl := resp.Header.ContentLength()
	if src == nil || cl == 0 {
		if src != nil {
			src.CloseWithError(nil)
		}
		body := resp.Body()
		b.m.write(body)
		ctx.Response.SetBody(body)
		b.end(nil)
		return
	}
	b.src = src
	if cl < 0 {
		cl = -1
		ctx.Response.ImmediateHeaderFlush = true
	}
	ctx.Response.SetBodyStream(b, cl)
}

// respBody streams a provider's response to the sandbox and meters its
// usage; fasthttp closes it once written or when the sandbox has gone.
type respBody struct {
	p    *Proxy
	c    *call
	resp *fasthttp.Response
	src  fasthttp.ReadCloserWithError
	m    meter
	done bool
}

// Read passes on what the provider sent and meters it. It runs after
// serve has returned, outside its recover: a panic here ends this stream
// as a panic, logged like serve's, instead of fasthttp's own recover
// logging the panic's value as an aborted call.
func (b *respBody) Read(buf []byte) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError(r)
			b.c.outcome = outcomePanic
			b.p.log.Error("egress stream ended by a panic", "client", b.c.client, "user", b.c.caller.User, "provider", b.c.provider, "err", err)
			n = 0
		}
	}()
	n, err = b.src.Read(buf)
	if n > 0 {
		b.m.write(buf[:n])
	}
	return n, err
}

// CloseWithError ends the stream: err is why the sandbox side stopped
// early (nil once the body was written).
func (b *respBody) CloseWithError(err error) error {
	if b.src != nil {
		b.src.CloseWithError(err)
	}
	b.end(err)
	return nil
}

func (b *respBody) end(err error) {
	if b.done {
		return
	}
	b.done = true
	fasthttp.ReleaseResponse(b.resp)
	c := b.c
	c.usage = b.m.done()
	if err != nil && c.outcome != outcomePanic {
		c.outcome = outcomeAborted
	}
	b.p.budgets.charge(c.caller.User, c.usage.Total, c.limits)
	b.p.finish(c)
}

// serverLogger sends fasthttp's own messages (a connection it dropped) to
// the proxy's log at Debug.
type serverLogger struct{ log *slog.Logger }

func (l serverLogger) Printf(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...))
}
