package handshake

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Target identifies one browser-facing upstream: whose request it is, which
// pod container printed the launch token and where the pod listens. The
// pod fields must come from informer data, never from the request.
type Target struct {
	// User is the authenticated sandgate user the cookie is cached for.
	User string
	// Namespace, Pod, PodUID and Container locate the container's log
	// directory under the log root.
	Namespace string
	Pod       string
	PodUID    string
	Container string
	// Addr is the pod's host:port.
	Addr string
	// Host is the browser's Host header, which the app binds its cookie
	// to; Addr is sent when it is empty.
	Host string
	// ForwardedFor, ForwardedProto and ForwardedHost are sent as the
	// X-Forwarded-* headers of the exchange when not empty.
	ForwardedFor   string
	ForwardedProto string
	ForwardedHost  string
}

// validate reports ErrInvalidRef for any field that may not reach a path,
// a header or a cache key.
func (t Target) validate() error {
	if err := t.logRef().validate(); err != nil {
		return err
	}
	switch {
	case t.User == "" || !validText(t.User, maxUserLen):
		return fmt.Errorf("%w: user", ErrInvalidRef)
	case !validAddr(t.Addr):
		return fmt.Errorf("%w: address", ErrInvalidRef)
	case t.Host != "" && !validHost(t.Host):
		return fmt.Errorf("%w: host", ErrInvalidRef)
	case !validText(t.ForwardedFor, maxHeaderLen),
		!validText(t.ForwardedProto, maxHeaderLen),
		!validText(t.ForwardedHost, maxHeaderLen):
		return fmt.Errorf("%w: forwarded headers", ErrInvalidRef)
	}
	return nil
}

func (t Target) logRef() logRef {
	return logRef{namespace: t.Namespace, pod: t.Pod, uid: t.PodUID, container: t.Container}
}

// key names t's cookie; Host names compare case-insensitively, so case
// variants of one Host share it.
func (t Target) key() cacheKey {
	return cacheKey{user: t.User, podUID: t.PodUID, host: strings.ToLower(t.Host)}
}

// Handshaker reads launch tokens from pod log files (or token files) on
// this node, trades them for the app's auth cookies and caches the result
// per (user, pod UID, Host). It is safe for concurrent use; build one in
// main with New and Close it on shutdown.
type Handshaker struct {
	log      *slog.Logger
	source   tokenSource
	refused  *refusedTokens
	ex       *exchanger
	cache    *cookieCache
	failures *failureCache
	budget   *userBudget
	metrics  *metrics
	timeout  time.Duration
	now      func() time.Time
	group    singleflight.Group

	mu sync.Mutex
	// epoch counts ForgetPod and ForgetUser calls. A handshake stores its
	// result only if no forget happened while it ran, so forgetting wins
	// over a handshake that was in flight for a pod being deleted.
	epoch  uint64
	closed bool
	flying sync.WaitGroup
}

// New builds a Handshaker: it opens the log root (or, with the file
// source, the kubelet's pod directory), compiles the token pattern, builds
// the HTTP client and registers the metrics.
func New(o Options) (*Handshaker, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("handshake options: %w", err)
	}
	o = o.withDefaults()
	cache, err := newCookieCache(o.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("build cookie cache: %w", err)
	}
	refused, err := newRefusedTokens(refusedCacheSize)
	if err != nil {
		return nil, fmt.Errorf("build refused token cache: %w", err)
	}
	failures, err := newFailureCache(o.FailureTTL, o.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("build failure cache: %w", err)
	}
	budget, err := newUserBudget(o.MaxPerUser, o.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("build handshake budget: %w", err)
	}
	m, err := newMetrics(o.Registerer, o.TokenSource)
	if err != nil {
		return nil, err
	}
	src, err := newSource(o)
	if err != nil {
		return nil, err
	}
	now := time.Now
	return &Handshaker{
		log:      o.Logger.With("component", "handshake"),
		source:   src,
		refused:  refused,
		ex:       newExchanger(o, now),
		cache:    cache,
		failures: failures,
		budget:   budget,
		metrics:  m,
		timeout:  o.Timeout,
		now:      now,
	}, nil
}

// newSource opens the root of o's token source.
func newSource(o Options) (tokenSource, error) {
	if o.TokenSource == SourceFile {
		root, err := os.OpenRoot(o.PodsRoot)
		if err != nil {
			return nil, fmt.Errorf("open kubelet pods directory: %w", err)
		}
		return &fileSource{reader: newFileReader(root, o.TokenFile)}, nil
	}
	tm, err := newTokenMatcher(o.TokenPattern, o.TokenStream)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(o.LogRoot)
	if err != nil {
		return nil, fmt.Errorf("open log root: %w", err)
	}
	return &logSource{
		reader: &logReader{root: root, limits: readerLimits{
			maxLines:      o.TailLines,
			maxFileBytes:  o.MaxFileBytes,
			maxTotalBytes: o.MaxTotalBytes,
			maxGzipBytes:  o.MaxGzipBytes,
		}},
		matcher: tm,
	}, nil
}

// Cookie returns the Cookie header value to send upstream for t: from the
// cache, or from a new handshake that concurrent callers for the same
// (user, pod UID, Host) share. A caller whose ctx ends stops waiting; the
// shared handshake goes on, bounded by Options.Timeout, for the others.
func (h *Handshaker) Cookie(ctx context.Context, t Target) (string, error) {
	if err := h.admit(t); err != nil {
		return "", err
	}
	k := t.key()
	if e, ok := h.cache.get(k, h.now()); ok {
		h.metrics.cacheLookups.WithLabelValues("hit").Inc()
		return e.cookie, nil
	}
	h.metrics.cacheLookups.WithLabelValues("miss").Inc()
	return h.flight(ctx, t, k, false)
}

// admit checks t and that the Handshaker is still open, before a cache
// lookup or a handshake for t.
func (h *Handshaker) admit(t Target) error {
	if err := t.validate(); err != nil {
		h.metrics.handshakes.WithLabelValues(resultInvalidRef, h.source.name()).Inc()
		return err
	}
	if h.isClosed() {
		return ErrClosed
	}
	return nil
}

// Refresh redoes the handshake for t after the upstream answered 401 to
// stale, the cookie the failed request carried. If the cache already holds
// a different cookie (another request refreshed first) that one is
// returned without a handshake; an empty stale always redoes it. The proxy
// calls Refresh at most once per request.
func (h *Handshaker) Refresh(ctx context.Context, t Target, stale string) (string, error) {
	if err := h.admit(t); err != nil {
		return "", err
	}
	k := t.key()
	if e, ok := h.cache.get(k, h.now()); ok && stale != "" && e.cookie != stale {
		return e.cookie, nil
	}
	h.cache.remove(k)
	return h.flight(ctx, t, k, true)
}

// ForgetPod drops every cached cookie of the pod with this UID and the
// tokens its app refused. The informer calls it when the pod is deleted or
// replaced or its sandbox is suspended.
func (h *Handshaker) ForgetPod(uid string) {
	n := h.forget(func(k cacheKey) bool { return k.podUID == uid })
	h.refused.forgetPod(uid)
	h.log.Debug("forgot pod cookies", "pod_uid", uid, "entries", n)
}

// ForgetUser drops every cached cookie of user, e.g. when the user is
// deleted.
func (h *Handshaker) ForgetUser(user string) {
	n := h.forget(func(k cacheKey) bool { return k.user == user })
	h.log.Debug("forgot user cookies", "user", user, "entries", n)
}

// forget drops the matching entries and returns how many it dropped.
func (h *Handshaker) forget(match func(cacheKey) bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.epoch++
	h.failures.removeIf(match)
	return h.cache.removeIf(match)
}

// Close waits for handshakes in flight, then releases the source's root
// directory and the client's idle connections. Calls after Close return ErrClosed.
func (h *Handshaker) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.flying.Wait()
	h.ex.client.CloseIdleConnections()
	return h.source.close()
}

func (h *Handshaker) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// flight runs or joins the shared handshake for k and waits for it or for
// ctx. force skips the cache check a late joiner would otherwise get.
func (h *Handshaker) flight(ctx context.Context, t Target, k cacheKey, force bool) (string, error) {
	ch := h.group.DoChan(k.flightKey(), func() (any, error) {
		now := h.now()
		if !force {
			// A flight that just finished may have stored the cookie
			// between our cache miss and now.
			if e, ok := h.cache.get(k, now); ok {
				return e.cookie, nil
			}
		}
		if err := h.failures.get(k, now); err != nil {
			return "", err
		}
		if !h.budget.take(t.User, now) {
			h.metrics.handshakes.WithLabelValues(resultThrottled, h.source.name()).Inc()
			return "", fmt.Errorf("%w: %d per minute", ErrThrottled, h.budget.max)
		}
		return h.handshake(t, k)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", fmt.Errorf("wait for handshake: %w", context.Cause(ctx))
	}
}

// handshake does one token lookup and exchange and stores the result. It
// runs detached from any one caller's context, bounded by the timeout.
func (h *Handshaker) handshake(t Target, k cacheKey) (string, error) {
	epoch, ok := h.enter()
	if !ok {
		return "", ErrClosed
	}
	defer h.flying.Done()
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()

	start := time.Now()
	c, a, err := h.fetch(ctx, t)
	result := resultOf(err)
	h.metrics.handshakes.WithLabelValues(result, h.source.name()).Inc()
	h.metrics.logBytesRead.Add(float64(a.found.logBytes))
	attrs := append(targetAttrs(t, h.source.name()),
		slog.String("result", result),
		slog.Int("files", a.found.files),
		slog.Int("log_lines", a.found.lines),
		slog.Int64("bytes_read", a.found.bytesRead),
		slog.Int("candidates", len(a.found.tokens)),
		slog.Int("candidates_tried", a.tried),
		slog.Int("candidates_skipped", a.found.skipped),
		slog.Int64("duration_ms", time.Since(start).Milliseconds()),
	)
	if a.found.stoppedAt != nil {
		attrs = append(attrs, slog.String("log_stopped", a.found.stoppedAt.Error()))
	}
	if err != nil {
		// err is built by this package and never holds the token or
		// the cookie.
		h.log.LogAttrs(ctx, slog.LevelWarn, "handshake failed", append(attrs, slog.String("err", err.Error()))...)
		h.mu.Lock()
		if h.epoch == epoch {
			h.failures.add(k, err, h.now())
		}
		h.mu.Unlock()
		return "", err
	}
	h.log.LogAttrs(ctx, slog.LevelDebug, "handshake done", attrs...)

	h.mu.Lock()
	if h.epoch == epoch {
		h.cache.add(k, cacheEntry{cookie: c.header, expires: c.expires})
	}
	h.mu.Unlock()
	return c.header, nil
}

// targetAttrs are the log attributes naming t's pod and the token source.
func targetAttrs(t Target, source string) []slog.Attr {
	return []slog.Attr{
		slog.String("user", t.User),
		slog.String("namespace", t.Namespace),
		slog.String("pod", t.Pod),
		slog.String("pod_uid", t.PodUID),
		slog.String("source", source),
	}
}

// enter registers a handshake in flight unless the Handshaker is closed
// and returns the current forget epoch.
func (h *Handshaker) enter() (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, false
	}
	h.flying.Add(1)
	return h.epoch, true
}
