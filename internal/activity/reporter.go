package activity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sandgate/sandgate/internal/defaults"
	"github.com/sandgate/sandgate/internal/pause"
)

// Reporter defaults that NewReporter applies to zero fields.
const (
	// DefaultReportInterval is REPORT_INTERVAL's default.
	DefaultReportInterval = 10 * time.Second
	// DefaultAttempts is how many times one report is tried.
	DefaultAttempts = 3
	// DefaultMinGap is the least time between two reports when the Tracker
	// asks for early ones.
	DefaultMinGap = time.Second

	defaultAttemptTimeout = 5 * time.Second
	firstBackoff          = 250 * time.Millisecond
)

// errStatus is a non-2xx answer; retryable says whether another attempt
// may succeed (401: the token may just have rotated).
type errStatus struct {
	code      int
	retryable bool
}

func (e *errStatus) Error() string { return fmt.Sprintf("auth API answered %d", e.code) }

// Sender posts one encoded report to the auth API and returns the status
// it answered; an error means no answer. The node proxy's auth API client
// implements it.
type Sender interface {
	PostReport(ctx context.Context, body []byte) (status int, err error)
}

// ReporterOptions configures a Reporter; main fills it from flags and
// environment.
type ReporterOptions struct {
	// Tracker is the table to report. Required.
	Tracker *Tracker
	// Node is this node's name (the downward API's spec.nodeName). Required.
	Node string
	// Sender sends the reports: the node proxy's auth API client.
	// Required.
	Sender Sender
	// Interval is REPORT_INTERVAL.
	Interval time.Duration
	// MinGap is the least time between two reports.
	MinGap time.Duration
	// Attempts bounds the tries of one report; all of them fit in one
	// Interval, since the next report supersedes it anyway.
	Attempts int
	// Timeout bounds one attempt; zero means min(5s, Interval/2).
	Timeout time.Duration
	// Logger receives failures; nil discards them.
	Logger *slog.Logger
	// Registerer receives the reporter's metrics; nil leaves them
	// unregistered.
	Registerer prometheus.Registerer
}

// Validate reports every problem with o at once and changes nothing. Zero
// durations and counts are valid: NewReporter replaces them with defaults.
func (o ReporterOptions) Validate() error {
	var errs []error
	if o.Tracker == nil {
		errs = append(errs, errors.New("tracker is required"))
	}
	if len(validation.IsDNS1123Subdomain(o.Node)) > 0 {
		errs = append(errs, fmt.Errorf("node name %q is not a DNS subdomain", o.Node))
	}
	if o.Sender == nil {
		errs = append(errs, errors.New("sender is required"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"interval", o.Interval}, {"min gap", o.MinGap}, {"timeout", o.Timeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v is negative", d.name, d.v))
		}
	}
	if o.Attempts < 0 {
		errs = append(errs, fmt.Errorf("attempts %d is negative", o.Attempts))
	}
	return errors.Join(errs...)
}

func (o ReporterOptions) withDefaults() ReporterOptions {
	defaults.Set(&o.Interval, DefaultReportInterval)
	defaults.Set(&o.MinGap, min(DefaultMinGap, o.Interval))
	defaults.Set(&o.Attempts, DefaultAttempts)
	defaults.Set(&o.Timeout, min(defaultAttemptTimeout, o.Interval/2))
	defaults.Set(&o.Logger, slog.New(slog.DiscardHandler))
	return o
}

// Reporter posts its Tracker's table to the auth API every Interval, and
// early (at most every MinGap) when the Tracker signals new work on a quiet
// sandbox.
type Reporter struct {
	opts ReporterOptions
	log  *slog.Logger
	m    *reporterMetrics
}

// NewReporter validates o and builds a Reporter; Run starts it.
func NewReporter(o ReporterOptions) (*Reporter, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("reporter options: %w", err)
	}
	o = o.withDefaults()
	m, err := newReporterMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	return &Reporter{opts: o, log: o.Logger.With("component", "activity_reporter"), m: m}, nil
}

// Run reports at once, then every Interval and on early requests, until ctx
// ends; it returns nil then. A report that fails every attempt is logged
// and dropped: the next one carries the whole table again.
func (r *Reporter) Run(ctx context.Context) error {
	tick := time.NewTicker(r.opts.Interval)
	defer tick.Stop()
	gap := time.NewTimer(0)
	defer gap.Stop()
	for {
		r.Send(ctx)
		gap.Reset(r.opts.MinGap)
		select {
		case <-ctx.Done():
			return nil
		case <-gap.C:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-r.opts.Tracker.Changed():
		}
	}
}

// Send posts one report now, retrying within one Interval, and returns the
// last error. Run calls it; a draining node proxy may call it once more
// after its last request ended.
func (r *Reporter) Send(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, r.opts.Interval)
	defer cancel()
	rep := Report{Node: r.opts.Node, SentAt: time.Now().UnixMilli(), Entries: r.opts.Tracker.Snapshot()}
	body, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("encode report: %w", err) // plain structs always encode
	}
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		if err = r.post(ctx, body); err == nil {
			r.m.reports.WithLabelValues(resultOK).Inc()
			r.log.Debug("activity reported", "entries", len(rep.Entries), "attempt", attempt)
			return nil
		}
		var st *errStatus
		if attempt >= r.opts.Attempts || (errors.As(err, &st) && !st.retryable) || !pause.For(ctx, backoff) {
			break
		}
		backoff *= 2
	}
	if parent.Err() != nil {
		return err // shutting down: not a failure worth a warning
	}
	r.m.reports.WithLabelValues(resultError).Inc()
	r.log.Warn("activity report failed", "error", err, "entries", len(rep.Entries))
	return err
}

func (r *Reporter) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	c, err := r.opts.Sender.PostReport(ctx, body)
	switch {
	case err != nil:
		return err
	case c >= 200 && c < 300:
		return nil
	case c == http.StatusUnauthorized, c == http.StatusTooManyRequests, c >= 500:
		return &errStatus{code: c, retryable: true}
	default:
		return &errStatus{code: c}
	}
}
