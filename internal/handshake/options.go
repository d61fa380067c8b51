package handshake

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Defaults that New applies to zero Options fields.
const (
	// DefaultLogRoot is where the kubelet keeps pod logs.
	DefaultLogRoot = "/var/log/pods"
	// DefaultTailLines is how many log lines are searched when the caller
	// (DSH_LOG_TAIL_LINES) sets none.
	DefaultTailLines = 1000
	// DefaultCookiePrefix is the name prefix of the agent app's auth
	// cookies.
	DefaultCookiePrefix = "dsh-auth-"

	defaultMaxFileBytes  = 1 << 20
	defaultMaxTotalBytes = 4 << 20
	defaultMaxGzipBytes  = 64 << 20
	defaultTimeout       = 5 * time.Second
	defaultCacheSize     = 4096
)

// Options configures a Handshaker. Zero fields take the defaults above;
// main fills the rest from its flags and environment.
type Options struct {
	// LogRoot is the node's pod log directory, opened once by New.
	LogRoot string
	// TailLines bounds how many logical log lines are searched for the
	// token, newest first (DSH_LOG_TAIL_LINES).
	TailLines int
	// MaxFileBytes bounds the tail read from one log file.
	MaxFileBytes int64
	// MaxTotalBytes bounds the tail read from all of a container's files.
	MaxTotalBytes int64
	// MaxGzipBytes bounds the bytes decompressed from one rotated .gz
	// file, which has to be read from its start.
	MaxGzipBytes int64
	// TokenPattern finds the launch token in a log line: the group named
	// "token", or else the first group. DefaultTokenPattern when empty.
	TokenPattern string
	// CookiePrefix selects the upstream's auth cookies by name.
	CookiePrefix string
	// Timeout bounds one whole handshake: log read plus exchange.
	Timeout time.Duration
	// CacheSize bounds the number of cached cookies.
	CacheSize int
	// Dial connects to a pod address; nil dials TCP. Tests pass an
	// in-memory listener's dialer.
	Dial fasthttp.DialFunc
	// Logger receives the package's logs; nil discards them.
	Logger *slog.Logger
	// Registerer receives the package's metrics; nil leaves them
	// unregistered.
	Registerer prometheus.Registerer
}

// Validate reports every problem with o at once and changes nothing. Zero
// fields are valid: New replaces them with defaults.
func (o Options) Validate() error {
	var errs []error
	if o.LogRoot != "" && !filepath.IsAbs(o.LogRoot) {
		errs = append(errs, fmt.Errorf("log root %q is not an absolute path", o.LogRoot))
	}
	if o.TailLines < 0 {
		errs = append(errs, fmt.Errorf("tail lines %d is negative", o.TailLines))
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"max file bytes", o.MaxFileBytes}, {"max total bytes", o.MaxTotalBytes}, {"max gzip bytes", o.MaxGzipBytes}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s %d is negative", f.name, f.v))
		}
	}
	if o.TokenPattern != "" {
		if _, err := newTokenMatcher(o.TokenPattern); err != nil {
			errs = append(errs, err)
		}
	}
	if o.CookiePrefix != "" && !validCookieName([]byte(o.CookiePrefix)) {
		errs = append(errs, fmt.Errorf("cookie prefix %q is not a cookie name", o.CookiePrefix))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %v is negative", o.Timeout))
	}
	if o.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("cache size %d is negative", o.CacheSize))
	}
	return errors.Join(errs...)
}

// withDefaults returns o with zero fields set to their defaults.
func (o Options) withDefaults() Options {
	set := func(p *int64, d int64) {
		if *p == 0 {
			*p = d
		}
	}
	if o.LogRoot == "" {
		o.LogRoot = DefaultLogRoot
	}
	if o.TailLines == 0 {
		o.TailLines = DefaultTailLines
	}
	set(&o.MaxFileBytes, defaultMaxFileBytes)
	set(&o.MaxTotalBytes, defaultMaxTotalBytes)
	set(&o.MaxGzipBytes, defaultMaxGzipBytes)
	if o.TokenPattern == "" {
		o.TokenPattern = DefaultTokenPattern
	}
	if o.CookiePrefix == "" {
		o.CookiePrefix = DefaultCookiePrefix
	}
	if o.Timeout == 0 {
		o.Timeout = defaultTimeout
	}
	if o.CacheSize == 0 {
		o.CacheSize = defaultCacheSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
