package sweeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/defaults"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// Defaults that New applies to zero Options fields. The lease timings are
// client-go's usual ones.
const (
	DefaultLeaseName      = "sandgate-authapi-leader"
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
	DefaultIdleTimeout    = 15 * time.Minute
	DefaultBusyAllowance  = 8 * time.Hour
	DefaultReportInterval = activity.DefaultReportInterval
	defaultPatchTimeout   = 5 * time.Second
)

// SilentIntervals is how many report intervals a node may stay silent
// before its in-flight counts no longer count.
const SilentIntervals = 3

// SandboxClient is what the Sweeper needs of the typed Sandbox client
// (*sandboxapi.SandboxClient), scoped to Options.Namespace.
type SandboxClient interface {
	sandboxapi.ListWatcher[*agents.SandboxList]
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*agents.Sandbox, error)
}

// Options configures a Sweeper. main fills it from flags and environment;
// zero durations take the defaults above.
type Options struct {
	// Namespace holds the claims and Sandboxes, and the Lease unless
	// LeaseNamespace says otherwise. Required.
	Namespace string
	// Sandboxes and Claims are typed clients scoped to Namespace. Required.
	Sandboxes SandboxClient
	Claims    sandboxapi.ListWatcher[*extensions.SandboxClaimList]
	// Leases reaches the Lease (clientset.CoordinationV1()). Required.
	Leases coordinationv1.LeasesGetter
	// LeaseName and LeaseNamespace name the Lease.
	LeaseName      string
	LeaseNamespace string
	// Identity is this replica's lease identity, built with Identity from
	// the pod name and the address where it takes reports. Required.
	Identity string
	// LeaseDuration (a whole number of seconds, as the Lease stores it),
	// RenewDeadline and RetryPeriod are the leader-election timings:
	// RetryPeriod*1.2 < RenewDeadline < LeaseDuration.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// IdleTimeout is IDLE_TIMEOUT: how long a sandbox must go without
	// activity and in-flight work before it is suspended.
	IdleTimeout time.Duration
	// ReportInterval is the node proxies' REPORT_INTERVAL; a node silent for
	// SilentIntervals of them no longer counts.
	ReportInterval time.Duration
	// SweepInterval is how often the leader sweeps; ReportInterval when
	// zero.
	SweepInterval time.Duration
	// PatchTimeout bounds one suspend patch.
	PatchTimeout time.Duration
	// CountOpenConnections is IDLE_COUNTS_OPEN_CONNECTIONS: an open
	// WebSocket keeps its sandbox awake even when silent.
	CountOpenConnections bool
	// BusyAllowance is BUSY_ALLOWANCE: how long, per user and UTC day,
	// agents' busy declarations may keep a sandbox awake past its idle
	// deadline.
	BusyAllowance time.Duration
	// Pods deletes the terminated pods of managed sandboxes so the
	// controller recreates them; nil leaves them alone.
	Pods PodDeleter
	// Events records what the leader did on the Sandbox; nil records
	// nothing.
	Events EventCreator
	// Logger receives the sweeper's logs; nil discards them.
	Logger *slog.Logger
	// Audit receives one line per suspend (docs/audit.md), whatever
	// Logger's level; nil sends them to Logger.
	Audit *slog.Logger
	// Registerer receives the sweeper's metrics; nil leaves them
	// unregistered.
	Registerer prometheus.Registerer
}

// Validate reports every problem with o at once and changes nothing. Zero
// durations are valid and are checked as the defaults they become.
func (o Options) Validate() error {
	var errs []error
	if len(validation.IsDNS1123Label(o.Namespace)) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q is not a DNS label", o.Namespace))
	}
	if o.LeaseNamespace != "" && len(validation.IsDNS1123Label(o.LeaseNamespace)) > 0 {
		errs = append(errs, fmt.Errorf("lease namespace %q is not a DNS label", o.LeaseNamespace))
	}
	if o.LeaseName != "" && len(validation.IsDNS1123Subdomain(o.LeaseName)) > 0 {
		errs = append(errs, fmt.Errorf("lease name %q is not a DNS subdomain", o.LeaseName))
	}
	if _, _, err := ParseIdentity(o.Identity); err != nil {
		errs = append(errs, err)
	}
	if o.Sandboxes == nil || o.Claims == nil || o.Leases == nil {
		errs = append(errs, errors.New("sandbox, claim and lease clients are required"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"lease duration", o.LeaseDuration}, {"renew deadline", o.RenewDeadline}, {"retry period", o.RetryPeriod},
		{"idle timeout", o.IdleTimeout}, {"report interval", o.ReportInterval}, {"sweep interval", o.SweepInterval},
		{"patch timeout", o.PatchTimeout}, {"busy allowance", o.BusyAllowance},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v is negative", d.name, d.v))
		}
	}
	d := o.withDefaults()
	if d.LeaseDuration < time.Second || d.LeaseDuration%time.Second != 0 {
		errs = append(errs, fmt.Errorf("lease duration %v is not a whole number of seconds", d.LeaseDuration))
	}
	if d.RenewDeadline >= d.LeaseDuration {
		errs = append(errs, fmt.Errorf("renew deadline %v is not shorter than the lease duration %v", d.RenewDeadline, d.LeaseDuration))
	}
	if float64(d.RenewDeadline) <= leaderelection.JitterFactor*float64(d.RetryPeriod) {
		errs = append(errs, fmt.Errorf("renew deadline %v is not longer than %v times the retry period %v", d.RenewDeadline, leaderelection.JitterFactor, d.RetryPeriod))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	set := func(p *time.Duration, d time.Duration) {
		if *p == 0 {
			*p = d
		}
	}
	defaults.Set(&o.LeaseName, DefaultLeaseName)
	defaults.Set(&o.LeaseNamespace, o.Namespace)
	set(&o.LeaseDuration, DefaultLeaseDuration)
	set(&o.RenewDeadline, DefaultRenewDeadline)
	set(&o.RetryPeriod, DefaultRetryPeriod)
	set(&o.IdleTimeout, DefaultIdleTimeout)
	set(&o.BusyAllowance, DefaultBusyAllowance)
	set(&o.ReportInterval, DefaultReportInterval)
	set(&o.SweepInterval, o.ReportInterval)
	set(&o.PatchTimeout, defaultPatchTimeout)
	defaults.Set(&o.Logger, slog.New(slog.DiscardHandler))
	defaults.Set(&o.Audit, o.Logger)
	return o
}
