package egress

import (
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/defaults"
	"github.com/sandgate/sandgate/internal/informer"
)

// Defaults that New applies to zero Options fields.
const (
	DefaultMaxBodyBytes  = 1 << 20
	DefaultHeaderTimeout = 10 * time.Second
	DefaultUpstreamIdle  = 5 * time.Minute
	DefaultDialTimeout   = 10 * time.Second
	DefaultIdleTimeout   = 90 * time.Second
	DefaultDrainTimeout  = 20 * time.Second
	DefaultWriteTimeout  = 60 * time.Second // as the node proxy's WRITE_TIMEOUT
	DefaultCallsInFlight = 32
	// DefaultBusyMax is the longest one busy declaration keeps: an agent
	// renews it for longer work.
	DefaultBusyMax = time.Hour
	// DefaultMaxConnsPerClient is a sandbox's share of connections: an
	// agent's calls at once, CallsInFlight of them, with room to spare.
	DefaultMaxConnsPerClient = 64
	maxKeyFileBytes          = 64 << 10
	maxLimitsFileBytes       = 4 << 20 // a ConfigMap holds 1 MiB
	maxUsageDocumentBytes    = 4 << 20
)

// Callers finds the account behind a source address; *informer.Callers
// is the production one.
type Callers interface {
	ByIP(ip string) (informer.Caller, error)
}

// Activity is where admitted calls count as their sandbox's activity, as
// the node proxy counts the requests it proxies, and where an agent's busy
// declarations go; *activity.Tracker is the production one.
type Activity interface {
	BeginModelCall(activity.Key)
	EndModelCall(activity.Key)
	Busy(k activity.Key, until time.Time)
	ModelTokens(k activity.Key, day, tokens int64)
}

// Options configures a Proxy; main fills it from the settings.
type Options struct {
	// Providers are the upstreams, from ParseProviders. Required.
	Providers []Provider
	// KeysDir is the mounted provider-keys Secret. Required.
	KeysDir string
	// LimitsFile, when set, is a mounted limits file (ParseLimits),
	// read again when it changes; missing means Default for everyone.
	LimitsFile string
	// Default is every user's budget unless the limits file says
	// otherwise.
	Default Limits
	// MaxBodyBytes caps a request body (413 past it).
	MaxBodyBytes int
	// HeaderTimeout bounds reading a request and waiting for the
	// provider's response headers.
	HeaderTimeout time.Duration
	// UpstreamIdle is how long a provider may stay silent mid-response.
	UpstreamIdle time.Duration
	// IdleTimeout is the keep-alive time between a sandbox's calls.
	IdleTimeout time.Duration
	// WriteTimeout bounds each write to a sandbox, so one that stops
	// reading frees its call and the provider's connection.
	WriteTimeout time.Duration
	// CallsInFlight caps each user's calls open at once (429 past it).
	CallsInFlight int
	// MaxConnsPerClient caps the connections one sandbox address holds
	// open; past it a new one is closed on accept.
	MaxConnsPerClient int
	// DrainTimeout is how long shutdown waits for open calls.
	DrainTimeout time.Duration
	// Callers identifies the caller by source address. Required.
	Callers Callers
	// Activity, when set, records each admitted call as in flight on the
	// caller's sandbox from admission to its last byte (a stream
	// included), so the leader does not suspend an agent at work with no
	// browser attached, and takes the agents' busy declarations (busy.go);
	// without it the busy endpoint answers 404. Namespace is the
	// sandboxes' namespace, required with it.
	Activity  Activity
	Namespace string
	// BusyMax bounds one busy declaration: a longer one is cut to it.
	BusyMax time.Duration
	// Dial, when set, replaces the TCP dial to providers (tests).
	Dial func(addr string) (net.Conn, error)
	// Now is the clock for budgets; nil is time.Now.
	Now func() time.Time
	// Logger receives problems and Audit the audit lines (one per call);
	// nil Audit uses Logger, nil Logger discards.
	Logger, Audit *slog.Logger
	// Registerer gets the metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// missing reports the collaborators New cannot do without. The settings
// themselves are checked where they are loaded (nodeproxyd's
// Config.Validate, with ParseProviders); New takes them as valid.
func (o Options) missing() error {
	var errs []error
	if len(o.Providers) == 0 {
		errs = append(errs, errors.New("at least one provider is required"))
	}
	if o.KeysDir == "" {
		errs = append(errs, errors.New("keys directory is required"))
	}
	if o.Callers == nil {
		errs = append(errs, errors.New("callers are required"))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	defaults.Set(&o.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Set(&o.HeaderTimeout, DefaultHeaderTimeout)
	defaults.Set(&o.UpstreamIdle, DefaultUpstreamIdle)
	defaults.Set(&o.IdleTimeout, DefaultIdleTimeout)
	defaults.Set(&o.WriteTimeout, DefaultWriteTimeout)
	defaults.Set(&o.CallsInFlight, DefaultCallsInFlight)
	defaults.Set(&o.MaxConnsPerClient, DefaultMaxConnsPerClient)
	defaults.Set(&o.DrainTimeout, DefaultDrainTimeout)
	defaults.Set(&o.BusyMax, DefaultBusyMax)
	defaults.Clock(&o.Now)
	defaults.Set(&o.Logger, slog.New(slog.DiscardHandler))
	defaults.Set(&o.Audit, o.Logger)
	return o
}
