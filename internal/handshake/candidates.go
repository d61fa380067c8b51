package handshake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// maxExchanges bounds the exchanges of one handshake: the first candidate
// not refused before and, if the app refuses it too, the next one.
const maxExchanges = 2

// attempt is what one handshake did with its candidates.
type attempt struct {
	found found
	tried int // candidates exchanged
}

// fetch finds the launch-token candidates of t's container, leaving out
// tokens the app refused before, and exchanges them in the source's order.
// A 401 marks a candidate refused and moves on to the next distinct one,
// once; any other failure ends the handshake, since the next token would
// meet the same unreachable app.
func (h *Handshaker) fetch(ctx context.Context, t Target) (upstreamCookie, attempt, error) {
	var a attempt
	f, err := h.source.candidates(ctx, t, func(tok string) bool { return h.refused.has(t.PodUID, tok) })
	a.found = f
	h.metrics.candidates.WithLabelValues(candidateSkipped, h.source.name()).Add(float64(f.skipped))
	if err != nil {
		return upstreamCookie{}, a, err
	}
	fresh := f.tokens
	if len(fresh) == 0 {
		return upstreamCookie{}, a, fmt.Errorf("%w: the app refused all %d tokens found before", ErrNoToken, f.skipped)
	}
	var last error
	for i, tok := range fresh[:min(len(fresh), maxExchanges)] {
		a.tried++
		c, err := h.ex.exchange(ctx, t, tok)
		switch {
		case err == nil:
			h.metrics.candidates.WithLabelValues(candidateAccepted, h.source.name()).Inc()
			return c, a, nil
		case errors.Is(err, ErrTokenRefused):
			h.metrics.candidates.WithLabelValues(candidateRefused, h.source.name()).Inc()
			h.refused.add(t.PodUID, tok)
			h.warnRefused(ctx, t, i, len(fresh))
			last = err
		default:
			h.metrics.candidates.WithLabelValues(candidateFailed, h.source.name()).Inc()
			return upstreamCookie{}, a, fmt.Errorf("exchange launch token: %w", err)
		}
	}
	return upstreamCookie{}, a, fmt.Errorf("exchange launch token: %w", last)
}

// warnRefused logs one refused candidate: which of how many, never the
// token.
func (h *Handshaker) warnRefused(ctx context.Context, t Target, i, n int) {
	attrs := append(targetAttrs(t, h.source.name()),
		slog.Int("candidate", i+1),
		slog.Int("candidates", n),
		slog.Bool("next", i+1 < min(n, maxExchanges)),
	)
	h.log.LogAttrs(ctx, slog.LevelWarn, "launch token refused by the app", attrs...)
}
