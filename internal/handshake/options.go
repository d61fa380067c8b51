package handshake

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/defaults"
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
	// DefaultPodsRoot is the kubelet's pod directory, which holds each
	// pod's volumes under <uid>/volumes/.
	DefaultPodsRoot = "/var/lib/kubelet/pods"
	// DefaultTokenFile is where the file source looks below a pod's
	// directory: the file "token" in the pod's emptyDir volume "dsh-token".
	DefaultTokenFile = "volumes/kubernetes.io~empty-dir/dsh-token/token"

	defaultMaxFileBytes  = 1 << 20
	defaultMaxTotalBytes = 4 << 20
	defaultMaxGzipBytes  = 64 << 20
	defaultTimeout       = 5 * time.Second
	defaultCacheSize     = 4096
	// DefaultMaxPerUser is how many handshakes one user may cause per
	// minute when MaxPerUser is zero.
	DefaultMaxPerUser = 30
	// DefaultFailureTTL is how long a failed handshake is answered from
	// memory when FailureTTL is zero.
	DefaultFailureTTL = 2 * time.Second
)

// Token sources, the values of Options.TokenSource.
const (
	// SourceLog reads the app's launch line from the pod's CRI log files.
	SourceLog = "log"
	// SourceFile reads a token file the app writes into a volume of its
	// pod, found under the kubelet's pod directory.
	SourceFile = "file"
)

// Container streams, the values of Options.TokenStream.
const (
	// StreamStdout matches launch lines the app writes to stdout.
	StreamStdout = "stdout"
	// StreamStderr matches launch lines the app writes to stderr.
	StreamStderr = "stderr"
	// StreamAny matches launch lines on either stream.
	StreamAny = "any"
)

// Options configures a Handshaker. Zero fields take the defaults above;
// main fills the rest from its flags and environment.
type Options struct {
	// TokenSource is where launch tokens come from: SourceLog (the
	// default) or SourceFile.
	TokenSource string
	// LogRoot is the node's pod log directory, opened once by New with
	// the log source.
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
	// TokenPattern finds the launch token in a log line, in its group
	// named "token". DefaultTokenPattern when empty.
	TokenPattern string
	// TokenStream is the container stream whose lines TokenPattern is
	// matched against: StreamStdout (the default), StreamStderr or
	// StreamAny.
	TokenStream string
	// PodsRoot is the kubelet's pod directory on this node, opened once
	// by New with the file source.
	PodsRoot string
	// TokenFile is the token file's path below <PodsRoot>/<pod UID>:
	// relative, clean, without "..". DefaultTokenFile when empty.
	TokenFile string
	// CookiePrefix selects the upstream's auth cookies by name.
	CookiePrefix string
	// Timeout bounds one whole handshake: log read plus exchange.
	Timeout time.Duration
	// CacheSize bounds the number of cached cookies.
	CacheSize int
	// MaxPerUser caps the handshakes one user causes per minute, over all
	// pods and Hosts; past it Cookie and Refresh return ErrThrottled.
	MaxPerUser int
	// FailureTTL is how long a failed handshake's error is returned for
	// its (user, pod UID, Host) without trying again.
	FailureTTL time.Duration
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
	switch o.TokenSource {
	case "", SourceLog, SourceFile:
	default:
		errs = append(errs, fmt.Errorf("token source %q is not %s or %s", o.TokenSource, SourceLog, SourceFile))
	}
	for name, dir := range map[string]string{"log root": o.LogRoot, "pods root": o.PodsRoot} {
		if dir != "" && !filepath.IsAbs(dir) {
			errs = append(errs, fmt.Errorf("%s %q is not an absolute path", name, dir))
		}
	}
	if o.TokenFile != "" && !validTokenFilePath(o.TokenFile) {
		errs = append(errs, fmt.Errorf("token file %q is not a clean relative path below the pod directory", o.TokenFile))
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
		if _, _, err := compileTokenPattern(o.TokenPattern); err != nil {
			errs = append(errs, err)
		}
	}
	switch o.TokenStream {
	case "", StreamStdout, StreamStderr, StreamAny:
	default:
		errs = append(errs, fmt.Errorf("token stream %q is not %s, %s or %s", o.TokenStream, StreamStdout, StreamStderr, StreamAny))
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
	if o.MaxPerUser < 0 {
		errs = append(errs, fmt.Errorf("max handshakes per user %d is negative", o.MaxPerUser))
	}
	if o.FailureTTL < 0 {
		errs = append(errs, fmt.Errorf("failure TTL %v is negative", o.FailureTTL))
	}
	return errors.Join(errs...)
}

// withDefaults returns o with zero fields set to their defaults.
func (o Options) withDefaults() Options {
	defaults.Set(&o.TokenSource, SourceLog)
	defaults.Set(&o.LogRoot, DefaultLogRoot)
	defaults.Set(&o.PodsRoot, DefaultPodsRoot)
	defaults.Set(&o.TokenFile, DefaultTokenFile)
	defaults.Set(&o.TokenStream, StreamStdout)
	defaults.Set(&o.TailLines, DefaultTailLines)
	defaults.Set(&o.MaxFileBytes, defaultMaxFileBytes)
	defaults.Set(&o.MaxTotalBytes, defaultMaxTotalBytes)
	defaults.Set(&o.MaxGzipBytes, defaultMaxGzipBytes)
	defaults.Set(&o.TokenPattern, DefaultTokenPattern)
	defaults.Set(&o.CookiePrefix, DefaultCookiePrefix)
	defaults.Set(&o.Timeout, defaultTimeout)
	defaults.Set(&o.CacheSize, defaultCacheSize)
	defaults.Set(&o.MaxPerUser, DefaultMaxPerUser)
	defaults.Set(&o.FailureTTL, DefaultFailureTTL)
	defaults.Set(&o.Logger, slog.New(slog.DiscardHandler))
	return o
}
