package activity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation"
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
	// Sender sends the reports. When nil, they are posted to URL with
	// TokenFile's token by Client.
	Sender Sender
	// URL is the auth API's report endpoint (http or https). Required
	// without a Sender.
	URL string
	// TokenFile holds the projected ServiceAccount token sent as a bearer
	// token. It is read for every attempt because the kubelet rotates it;
	// empty sends no Authorization header (tests).
	TokenFile string
	// Interval is REPORT_INTERVAL.
	Interval time.Duration
	// MinGap is the least time between two reports.
	MinGap time.Duration
	// Attempts bounds the tries of one report; all of them fit in one
	// Interval, since the next report supersedes it anyway.
	Attempts int
	// Timeout bounds one attempt; zero means min(5s, Interval/2).
	Timeout time.Duration
	// Client posts the reports without a Sender (main sets its TLS
	// roots); nil uses a client of its own, built once.
	Client *http.Client
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
	if u, err := url.Parse(o.URL); o.Sender == nil && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		errs = append(errs, fmt.Errorf("report URL %q is not an http(s) URL", o.URL))
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
	if o.Interval == 0 {
		o.Interval = DefaultReportInterval
	}
	if o.MinGap == 0 {
		o.MinGap = min(DefaultMinGap, o.Interval)
	}
	if o.Attempts == 0 {
		o.Attempts = DefaultAttempts
	}
	if o.Timeout == 0 {
		o.Timeout = min(defaultAttemptTimeout, o.Interval/2)
	}
	if o.Client == nil && o.Sender == nil {
		o.Client = &http.Client{Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 1, IdleConnTimeout: 2 * o.Interval,
			TLSHandshakeTimeout: o.Timeout, ResponseHeaderTimeout: o.Timeout,
		}}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Reporter posts its Tracker's table to the auth API every Interval, and
// early (at most every MinGap) when the Tracker signals new work on a quiet
// sandbox.
type Reporter struct {
	opts ReporterOptions
	log  *slog.Logger
	m    *reporterMetrics
	// ownClient: the client was built here, so Run closes its idle
	// connections when it returns.
	ownClient bool
}

// NewReporter validates o and builds a Reporter; Run starts it.
func NewReporter(o ReporterOptions) (*Reporter, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("reporter options: %w", err)
	}
	own := o.Client == nil && o.Sender == nil
	o = o.withDefaults()
	m, err := newReporterMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	if o.Sender == nil {
		o.Sender = &httpSender{url: o.URL, tokenFile: o.TokenFile, client: o.Client}
	}
	return &Reporter{opts: o, log: o.Logger.With("component", "activity_reporter"), m: m, ownClient: own}, nil
}

// Run reports at once, then every Interval and on early requests, until ctx
// ends; it returns nil then. A report that fails every attempt is logged
// and dropped: the next one carries the whole table again.
func (r *Reporter) Run(ctx context.Context) error {
	if r.ownClient {
		defer r.opts.Client.CloseIdleConnections()
	}
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
		if attempt >= r.opts.Attempts || (errors.As(err, &st) && !st.retryable) || !sleep(ctx, backoff) {
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

// sleep waits d and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
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

// httpSender posts reports to url with the token in tokenFile, read for
// every attempt because the kubelet rotates it.
type httpSender struct {
	url       string
	tokenFile string
	client    *http.Client
}

func (s *httpSender) PostReport(ctx context.Context, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("build report request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if s.tokenFile != "" {
		tok, err := os.ReadFile(s.tokenFile)
		if err != nil {
			return 0, fmt.Errorf("read service account token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post report: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}
