package jwt

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/internal/defaults"
)

const (
	defaultRefreshInterval    = 5 * time.Minute
	defaultMinRefreshInterval = 5 * time.Second
	defaultFetchTimeout       = 5 * time.Second
	// maxJWKSBytes caps a fetched JWKS document.
	maxJWKSBytes = 1 << 20
)

// FetcherOptions configures a JWKSFetcher.
type FetcherOptions struct {
	// URL is the JWKS address, http or https. Required.
	URL string
	// Client sends the requests; nil means a client with no special setup.
	Client *http.Client
	// Header, when set, adds headers (for example authorization) to each
	// request.
	Header func(http.Header)
	// RefreshInterval is the period of background refreshes; zero means
	// 5 minutes.
	RefreshInterval time.Duration
	// MinRefreshInterval is the least time between two fetches started
	// because of an unknown kid; zero means 5 s.
	MinRefreshInterval time.Duration
	// FetchTimeout bounds one fetch; zero means 5 s.
	FetchTimeout time.Duration
	// Logger receives fetch failures; nil discards them.
	Logger *slog.Logger
	// Now is the clock for rate limiting; nil means time.Now.
	Now func() time.Time
	// OnReplaced, when set, runs after a fetch whose keys share no kid
	// with the keys it replaces (a signing key reset; rotations always
	// keep the signing key), on the fetching goroutine; it must not block.
	OnReplaced func()
}

// Validate reports every problem with o at once and changes nothing.
func (o FetcherOptions) Validate() error {
	var errs []error
	if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("jwks fetcher: url %q is not an absolute http(s) URL", o.URL))
	}
	if o.RefreshInterval < 0 || o.MinRefreshInterval < 0 || o.FetchTimeout < 0 {
		errs = append(errs, errors.New("jwks fetcher: intervals and timeout must not be negative"))
	}
	return errors.Join(errs...)
}

// JWKSFetcher is a KeySource backed by a remote JWKS. It keeps the last good
// key set: a failed or empty fetch never removes keys. It is safe for
// concurrent use.
type JWKSFetcher struct {
	opts FetcherOptions
	log  *slog.Logger
	keys atomic.Pointer[fetched]
	// refreshed is when the latest successful fetch stored its keys, in
	// Unix nanoseconds; 0 before the first.
	refreshed atomic.Int64
	// replaced counts the fetches whose keys replaced every key before.
	replaced atomic.Uint64

	mu       sync.Mutex
	ctx      context.Context // set by Start; bounds fetches
	last     time.Time       // start of the latest fetch
	inflight *fetchCall
	// changed wakes Start when Published names a version other than the
	// loaded one.
	changed chan struct{}
}

// fetched is one successfully fetched JWKS.
type fetched struct {
	keys    KeySet
	version string // JWKSVersion of the document
}

// fetchCall is one fetch that concurrent callers wait on together.
type fetchCall struct {
	done chan struct{}
	err  error
}

// NewJWKSFetcher validates opts, fills defaults and returns a fetcher with
// no keys; Start or the first PublicKey call loads them.
func NewJWKSFetcher(opts FetcherOptions) (*JWKSFetcher, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	defaults.Set(&opts.Client, &http.Client{})
	defaults.Set(&opts.RefreshInterval, defaultRefreshInterval)
	defaults.Set(&opts.MinRefreshInterval, defaultMinRefreshInterval)
	defaults.Set(&opts.FetchTimeout, defaultFetchTimeout)
	defaults.Clock(&opts.Now)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &JWKSFetcher{
		opts: opts, log: log.With("component", "jwks_fetcher"), ctx: context.Background(),
		changed: make(chan struct{}, 1),
	}, nil
}

// Start loads the keys, then refreshes them every RefreshInterval until ctx
// is done, and returns nil then. It blocks; run it in its own goroutine.
// Failures are logged; until the first load succeeds it retries every
// MinRefreshInterval. Between refreshes it fetches again when Published
// names another version, at most every MinRefreshInterval. Ready reports
// whether any keys have loaded.
func (f *JWKSFetcher) Start(ctx context.Context) error {
	f.mu.Lock()
	f.ctx = ctx
	f.mu.Unlock()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-f.changed:
			f.logFailure(ctx, f.refresh(false))
			continue
		case <-t.C:
		}
		f.logFailure(ctx, f.refresh(true))
		next := f.opts.RefreshInterval
		if !f.Ready() {
			next = f.opts.MinRefreshInterval
		}
		t.Reset(next)
	}
}

func (f *JWKSFetcher) logFailure(ctx context.Context, err error) {
	if err != nil && !errors.Is(err, errRateLimited) && ctx.Err() == nil {
		f.log.Warn("refresh jwks", "error", err)
	}
}

// Published tells the fetcher the JWKSVersion the auth API serves now (a
// node proxy reads it from the answers to its activity reports). A version
// other than the loaded one makes Start fetch the JWKS again without
// waiting for RefreshInterval, so a key reset reaches every node proxy
// within a report interval; the empty version is ignored. It never blocks.
func (f *JWKSFetcher) Published(version string) {
	if version == "" {
		return
	}
	if cur := f.keys.Load(); cur != nil && cur.version == version {
		return
	}
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// Ready reports whether a key set has been loaded.
func (f *JWKSFetcher) Ready() bool {
	return f.keys.Load() != nil
}

// LastRefresh returns when the latest successful fetch stored its keys
// (by the Now clock), or the zero time before the first.
func (f *JWKSFetcher) LastRefresh() time.Time {
	n := f.refreshed.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Replaced counts the fetches whose keys shared no kid with the keys they
// replaced: the signing key resets this fetcher has seen.
func (f *JWKSFetcher) Replaced() uint64 { return f.replaced.Load() }

// PublicKey returns the key named kid. For an unknown kid it refreshes the
// set first, unless a fetch started less than MinRefreshInterval ago;
// concurrent callers share one fetch.
func (f *JWKSFetcher) PublicKey(kid string) (ed25519.PublicKey, error) {
	if k, ok := f.lookup(kid); ok {
		return k, nil
	}
	if err := f.refresh(false); err != nil && !errors.Is(err, errRateLimited) {
		return nil, fmt.Errorf("%w: kid %q (refresh: %w)", ErrUnknownKey, kid, err)
	}
	if k, ok := f.lookup(kid); ok {
		return k, nil
	}
	return nil, fmt.Errorf("%w: kid %q", ErrUnknownKey, kid)
}

func (f *JWKSFetcher) lookup(kid string) (ed25519.PublicKey, bool) {
	if cur := f.keys.Load(); cur != nil {
		k, ok := cur.keys[kid]
		return k, ok
	}
	return nil, false
}

var errRateLimited = errors.New("refresh rate limited")

// refresh fetches the JWKS, or waits for a fetch already under way. Unless
// forced, it declines when the last fetch began under MinRefreshInterval ago.
func (f *JWKSFetcher) refresh(force bool) error {
	f.mu.Lock()
	if c := f.inflight; c != nil {
		f.mu.Unlock()
		<-c.done
		return c.err
	}
	now := f.opts.Now()
	if !force && !f.last.IsZero() && now.Sub(f.last) < f.opts.MinRefreshInterval {
		f.mu.Unlock()
		return errRateLimited
	}
	c := &fetchCall{done: make(chan struct{})}
	f.inflight, f.last = c, now
	ctx := f.ctx
	f.mu.Unlock()

	c.err = f.fetch(ctx)

	f.mu.Lock()
	f.inflight = nil
	f.mu.Unlock()
	close(c.done)
	return c.err
}

// fetch downloads and parses the JWKS and installs it on success.
func (f *JWKSFetcher) fetch(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, f.opts.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.opts.URL, nil)
	if err != nil {
		return fmt.Errorf("build jwks request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if f.opts.Header != nil {
		f.opts.Header(req.Header)
	}
	resp, err := f.opts.Client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch jwks: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return fmt.Errorf("read jwks: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return fmt.Errorf("read jwks: larger than %d bytes", maxJWKSBytes)
	}
	set, err := ParseJWKS(body)
	if err != nil {
		return err
	}
	prev := f.keys.Swap(&fetched{keys: set, version: JWKSVersion(body)})
	f.refreshed.Store(f.opts.Now().UnixNano())
	if prev != nil && disjoint(prev.keys, set) {
		f.replaced.Add(1)
		f.log.Warn("every signing key was replaced (a key reset): sessions of the old keys end", "keys", len(set))
		if f.opts.OnReplaced != nil {
			f.opts.OnReplaced()
		}
	}
	return nil
}

// disjoint reports whether a and b have no kid in common.
func disjoint(a, b KeySet) bool {
	for kid := range b {
		if _, ok := a[kid]; ok {
			return false
		}
	}
	return true
}
