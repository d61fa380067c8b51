package nodeproxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/activity"
)

// DefaultActivityPath is the auth API's activity report endpoint.
const DefaultActivityPath = "/internal/v1/activity"

// authClient is the node proxy's one client of the auth API: where it is
// (the public base sign-in pages are forwarded to, and the internal base
// of its /internal/ endpoints), the ServiceAccount token the internal calls
// carry, their timeout, and how their failures map to outcomes: no answer
// or a 5xx is an outage (ErrAuthAPIUnavailable), never a refusal. Renewal,
// redemption, wake and activity reports call it; forwarding streams
// through the forward stage's one exchange (4forward.go) to its public base.
type authClient struct {
	public   string // scheme://host[:port] of AuthAPI
	internal string // AuthAPIInternal, without a trailing slash
	http     *http.Client
	saToken  func() (string, error)
	timeout  time.Duration // RenewTimeout: one renewal, redemption or wake
	retry    time.Duration // RetryAfter, told to clients during an outage
	m        *metrics
	// reach remembers an outage met by a renewal or a redemption.
	reach *reachability
	// activityPath is where activity reports go.
	activityPath string
	// jwksPublished is Options.JWKSPublished.
	jwksPublished func(version string)
}

func newAuthClient(o Options, m *metrics, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *authClient {
	u, _ := url.Parse(o.AuthAPI) // Validate parsed it
	return &authClient{
		public:   u.Scheme + "://" + u.Host,
		internal: strings.TrimSuffix(o.AuthAPIInternal, "/"),
		http: &http.Client{Transport: &http.Transport{
			DialContext:         dial,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     30 * time.Second,
			TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		}},
		saToken:       o.ServiceAccountToken,
		timeout:       o.RenewTimeout,
		retry:         o.RetryAfter,
		m:             m,
		reach:         newReachability(o, m),
		activityPath:  o.ActivityPath,
		jwksPublished: o.JWKSPublished,
	}
}

// unreachableError is a call that no auth API replica answered, or that
// one answered with a 5xx.
type unreachableError struct {
	cause string
}

func (e *unreachableError) Error() string { return "auth API unreachable: " + e.cause }

// send posts body as JSON to path on the internal base with the
// ServiceAccount token, within ctx, and returns any answer for the caller
// to read and close. A call no replica answered is an *unreachableError.
func (c *authClient) send(ctx context.Context, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.internal+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build auth API request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.saToken != nil {
		sa, err := c.saToken()
		if err != nil {
			return nil, fmt.Errorf("read service account token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+sa)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &unreachableError{cause: "call failed"}
	}
	return resp, nil
}

// post is send where a 5xx answer is an *unreachableError too.
func (c *authClient) post(ctx context.Context, path string, body []byte) (*http.Response, error) {
	resp, err := c.send(ctx, path, body)
	if err != nil {
		return nil, err
	}
	if unreachableStatus(resp.StatusCode) {
		drainBody(resp)
		return nil, &unreachableError{cause: fmt.Sprintf("status %d", resp.StatusCode)}
	}
	return resp, nil
}

// call is post bounded by the client's timeout.
func (c *authClient) call(path string, body []byte, use func(*http.Response) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	resp, err := c.post(ctx, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return use(resp)
}

// guarded is call for calls that share the outage memory (renewal,
// redemption): it fails at once while the auth API was found unreachable
// moments ago, and records whether it answered.
func (c *authClient) guarded(what, path string, body []byte, use func(*http.Response) error) error {
	if err := c.reach.check(what); err != nil {
		return err
	}
	err := c.call(path, body, use)
	var down *unreachableError
	switch {
	case errors.As(err, &down):
		return c.reach.failed(what, down.cause)
	case err == nil, errors.Is(err, errRenewRefused), errors.Is(err, ErrUpstream):
		c.reach.reached() // an answer, welcome or not
	}
	return err
}

// down is the outage err reports for call, when it is one.
func (c *authClient) down(call string, err error) error {
	if u, ok := errors.AsType[*unreachableError](err); ok {
		return &authAPIDown{call: call, retry: c.retry, cause: u.cause}
	}
	return err
}

// forwardFailed is the outcome of a forward to the auth API that got no
// answer: the client's own failures stay what they are.
func (c *authClient) forwardFailed(err error) error {
	if !errors.Is(err, ErrUpstream) && !errors.Is(err, ErrUpstreamTimeout) {
		return err
	}
	c.m.authAPIUnreachable.WithLabelValues(callForward).Inc()
	return &authAPIDown{call: callForward, retry: c.retry, cause: err.Error()}
}

// PostReport sends one encoded activity report (activity.Sender). The
// reporter bounds each attempt with ctx and reads its answer by status;
// the JWKS version any answer names goes to jwksPublished.
func (c *authClient) PostReport(ctx context.Context, body []byte) (int, error) {
	resp, err := c.send(ctx, c.activityPath, body)
	if u, ok := errors.AsType[*unreachableError](err); ok {
		return 0, fmt.Errorf("post report: %s", u.cause)
	}
	if err != nil {
		return 0, err
	}
	if c.jwksPublished != nil {
		c.jwksPublished(resp.Header.Get(activity.JWKSVersionHeader))
	}
	drainBody(resp)
	return resp.StatusCode, nil
}

// drainBody reads what is left of a small answer and closes it, so the
// connection can be kept.
func drainBody(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

var _ activity.Sender = (*authClient)(nil)
