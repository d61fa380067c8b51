package authapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/jwt"
)

// ForwardedHeader marks an activity report one replica passed on to the
// leader; a replica that is not the leader either answers such a report
// with 503 instead of passing it on again.
const ForwardedHeader = "X-Sandgate-Forwarded"

// forwardTimeout bounds passing one report on to the leader.
const forwardTimeout = 5 * time.Second

// Activity is what the report endpoint needs of the leader-elected sweeper
// (*sweeper.Sweeper).
type Activity interface {
	Observe(activity.Report) error
	Leader() (sweeper.Leader, error)
}

var _ Activity = (*sweeper.Sweeper)(nil)

// handleActivity takes a node proxy's activity report: the leader observes
// it (204); a non-leader passes it on to the leader once, with the caller's
// token, and relays the outcome; a report already passed on, or one with no
// leader to go to, gets 503. Every answer names the version of the JWKS
// this replica serves.
func (s *Server) handleActivity(w http.ResponseWriter, r *http.Request) {
	if doc, err := s.keys.jwks(); err == nil {
		w.Header().Set(activity.JWKSVersionHeader, jwt.JWKSVersion(doc))
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, activity.MaxReportBytes))
	if err != nil {
		s.fail(w, r, bodyError(err))
		return
	}
	rep, err := activity.DecodeReport(bytes.NewReader(raw))
	if err != nil {
		s.fail(w, r, fmt.Errorf("%w: %w", ErrBadRequest, err))
		return
	}
	err = s.opts.Activity.Observe(rep)
	if err == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if errors.Is(err, sweeper.ErrNotLeader) && r.Header.Get(ForwardedHeader) == "" {
		leader, lerr := s.opts.Activity.Leader()
		if lerr == nil && !leader.Self {
			err = s.forward(r.Context(), leader.Addr, r.Header.Get("Authorization"), raw)
			if err == nil {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		} else if lerr != nil {
			err = lerr
		}
	}
	s.fail(w, r, withRetryAfter(fmt.Errorf("activity report: %w: %w", ErrUnavailable, err), time.Second))
}

// forward posts a report to the leader at addr (host:port of its internal
// listener) with the original caller's bearer token.
func (s *Server) forward(ctx context.Context, addr, auth string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/internal/v1/activity", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build forwarded report: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(ForwardedHeader, "1")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.opts.ForwardClient.Do(req)
	if err != nil {
		return fmt.Errorf("forward report to leader: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("leader answered %d", resp.StatusCode)
	}
	return nil
}
