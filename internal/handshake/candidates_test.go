package handshake

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// requestLogLine is the app's access-log line for a request whose path a
// link chose to look like a token parameter.
func requestLogLine(tok string) string {
	return "dsh web: GET /u/alice/x&token=" + tok + " 401 0ms"
}

func (x *harness) candidates(outcome string) float64 {
	return counter(x.h.metrics.candidates.WithLabelValues(outcome, SourceLog))
}

// refusals counts the WARN lines for refused tokens.
func (x *harness) refusals() int {
	return strings.Count(x.logBuf.String(), `"msg":"launch token refused by the app"`)
}

// TestTokenShapesAccepted: launch tokens of other lengths and alphabets,
// whole or split over P and F records, in one file or across a rotation,
// all reach the exchange.
func TestTokenShapesAccepted(t *testing.T) {
	line := func(tok string) string { return launchLine(tok) }
	tests := []struct {
		name  string
		token string
		write func(p *podLogs, c *crier, line string)
	}{
		{"32 hex", tokHex32, func(p *podLogs, c *crier, l string) { p.write("0.log", c.out("booting"), c.out(l)) }},
		{"22 characters", tokB64_22, func(p *podLogs, c *crier, l string) { p.write("0.log", c.out(l), c.out("ready")) }},
		{"200 characters", tok200, func(p *podLogs, c *crier, l string) { p.write("0.log", c.out(l)) }},
		{"32 hex over P and F records", tokHex32, func(p *podLogs, c *crier, l string) {
			p.write("0.log", c.out("booting"), c.rec("stdout", "P", l[:len(l)-20]), c.rec("stdout", "F", l[len(l)-20:]))
		}},
		{"200 characters over P, P and F records", tok200, func(p *podLogs, c *crier, l string) {
			p.write("0.log", c.rec("stdout", "P", l[:60]), c.rec("stdout", "P", l[60:150]), c.rec("stdout", "F", l[150:]), c.out("ready"))
		}},
		{"split across a rotation", tok200, func(p *podLogs, c *crier, l string) {
			p.writeGzip("0.log.20260801-110000.gz", c.out("booting"), c.rec("stdout", "P", l[:100]))
			p.write("0.log", c.rec("stdout", "F", l[100:]), c.out("dsh web: GET /api/messages 200 1ms"))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := newHarness(t, nil)
			x.logs.write("0.log") // replace the harness's launch line
			c := newCrier()
			tc.write(x.logs, c, line(tc.token))
			x.app.set(tc.token, x.cookie)
			if got := x.mustCookie(x.target); got != x.cookie {
				t.Fatalf("cookie %q, want %q", got, x.cookie)
			}
			if seen := x.app.seen.Last(); seen.uri != "/?token="+tc.token {
				t.Errorf("exchanged %q", seen.uri)
			}
			x.wantExchanges(1)
		})
	}
}

// TestRequestLogTokenNeverChosen: a link that makes the app log
// "&token=<43 characters>" after its launch line plants nothing.
func TestRequestLogTokenNeverChosen(t *testing.T) {
	x := newHarness(t, nil)
	x.logs.write("0.log", x.crier.out(launchLine(x.token)), x.crier.out(requestLogLine(tokB)), x.crier.out(requestLogLine(tokA)))
	if got := x.mustCookie(x.target); got != x.cookie {
		t.Fatalf("cookie %q", got)
	}
	x.wantExchanges(1)
	if seen := x.app.seen.Last(); seen.uri != "/?token="+x.token {
		t.Error("a token from the request log was exchanged")
	}
}

// TestPoisonedNewestCandidate: a launch line printed after the real one
// with a token the app does not know costs nothing: the container start's
// first launch line is tried first.
func TestPoisonedNewestCandidate(t *testing.T) {
	x := newHarness(t, nil)
	x.logs.write("0.log", x.crier.out(launchLine(x.token)), x.crier.out("agent output"), x.crier.out(launchLine(tokB)))

	if got := x.mustCookie(x.target); got != x.cookie {
		t.Fatalf("cookie %q, want the real app's", got)
	}
	x.wantExchanges(1)
	if x.candidates(candidateRefused) != 0 || x.refusals() != 0 {
		t.Errorf("candidates refused %v, refusal warnings %d; want none", x.candidates(candidateRefused), x.refusals())
	}
}

// TestStaleStartToken: when the start's first launch line is not the
// token the app holds now (it printed a newer one in the same container
// start), the newest is tried next, at the cost of one extra exchange,
// once; later handshakes skip the refused token.
func TestStaleStartToken(t *testing.T) {
	x := newHarness(t, nil)
	x.logs.write("0.log", x.crier.out(launchLine(tokB)), x.crier.out("agent output"), x.crier.out(launchLine(x.token)))

	if got := x.mustCookie(x.target); got != x.cookie {
		t.Fatalf("cookie %q, want the real app's", got)
	}
	x.wantExchanges(2) // the stale token, then the real one
	if x.candidates(candidateRefused) != 1 || x.candidates(candidateAccepted) != 1 {
		t.Errorf("candidates refused %v accepted %v, want 1 and 1", x.candidates(candidateRefused), x.candidates(candidateAccepted))
	}
	if n := x.refusals(); n != 1 {
		t.Errorf("%d refusal warnings, want 1", n)
	}

	// The app later answers 401 to the cookie: the refresh goes straight
	// to the real token.
	if _, err := x.h.Refresh(context.Background(), x.target, x.cookie); err != nil {
		t.Fatal(err)
	}
	x.wantExchanges(3)
	if x.candidates(candidateSkipped) != 1 || x.refusals() != 1 {
		t.Errorf("skipped %v, refusal warnings %d; want 1 and 1", x.candidates(candidateSkipped), x.refusals())
	}
	if strings.Contains(x.logBuf.String(), tokB) || strings.Contains(x.logBuf.String(), x.token) {
		t.Error("a token appears in the log")
	}
}

// TestRefusedTokenNotRetried: two tokens the app refuses, the start's
// first and the newest, take one failing request's worth of exchanges,
// never more, and a token the app refused is not exchanged again.
func TestRefusedTokenNotRetried(t *testing.T) {
	x := newHarness(t, nil)
	tokC := testToken("c")
	x.logs.write("0.log", x.crier.out(launchLine(tokB)), x.crier.out(launchLine(x.token)), x.crier.out(launchLine(tokC)))

	_, err := x.h.Cookie(context.Background(), x.target)
	if !errors.Is(err, ErrTokenRefused) || !errors.Is(err, ErrExchange) {
		t.Fatalf("got %v, want a refused token (an exchange error)", err)
	}
	x.wantExchanges(2) // the start's and the newest, then it gives up
	x.advance(DefaultFailureTTL)
	if got := x.mustCookie(x.target); got != x.cookie {
		t.Fatalf("cookie %q", got)
	}
	x.wantExchanges(3)
	if v := counter(x.h.metrics.handshakes.WithLabelValues(resultRefused, SourceLog)); v != 1 {
		t.Errorf("%v token_refused handshakes, want 1", v)
	}

	// Only planted tokens left: the answer is "no token" without asking
	// the app again.
	y := newHarness(t, nil)
	y.logs.write("0.log", y.crier.out(launchLine(tokB)))
	if _, err := y.h.Cookie(context.Background(), y.target); !errors.Is(err, ErrTokenRefused) {
		t.Fatalf("got %v", err)
	}
	for range 3 {
		y.advance(DefaultFailureTTL)
		if _, err := y.h.Refresh(context.Background(), y.target, ""); !errors.Is(err, ErrNoToken) {
			t.Fatalf("got %v, want ErrNoToken", err)
		}
	}
	y.wantExchanges(1)
	if y.candidates(candidateSkipped) != 3 {
		t.Errorf("skipped %v, want 3", y.candidates(candidateSkipped))
	}

	// Forgetting the pod forgets its refused tokens too.
	y.h.ForgetPod(testUID)
	y.h.Refresh(context.Background(), y.target, "")
	y.wantExchanges(2)
}

// TestFailedExchangeMarksNothing: an answer other than 401 says nothing
// about the token, so it is neither refused nor followed by the next
// candidate.
func TestFailedExchangeMarksNothing(t *testing.T) {
	x := newHarness(t, nil)
	x.logs.write("0.log", x.crier.out(launchLine(x.token)), x.crier.out(launchLine(tokB)))
	x.app.mu.Lock()
	x.app.raw = "HTTP/1.1 banana\r\n\r\n"
	x.app.mu.Unlock()
	if _, err := x.h.Cookie(context.Background(), x.target); !errors.Is(err, ErrExchange) || errors.Is(err, ErrTokenRefused) {
		t.Fatalf("got %v, want a plain exchange error", err)
	}
	x.wantExchanges(1) // no second try
	if x.candidates(candidateFailed) != 1 {
		t.Errorf("failed candidates %v, want 1", x.candidates(candidateFailed))
	}
	x.app.mu.Lock()
	x.app.raw = ""
	x.app.mu.Unlock()
	x.advance(DefaultFailureTTL)
	if got := x.mustCookie(x.target); got != x.cookie {
		t.Fatalf("cookie %q", got)
	}
	x.wantExchanges(2)
}

// TestPlantedLaunchLinesDoNotLockOut: however many launch lines an agent
// prints after the app's own, the user's handshake reaches the real token
// at the cost of at most one extra exchange (finding 4 of issue 45: 16
// planted lines made every later handshake "missing launch token").
func TestPlantedLaunchLinesDoNotLockOut(t *testing.T) {
	for _, planted := range []int{maxCandidates, 100} {
		t.Run(strconv.Itoa(planted), func(t *testing.T) {
			x := newHarness(t, nil)
			lines := []string{x.crier.out("booting"), x.crier.out(launchLine(x.token)), x.crier.out("ready")}
			for i := range planted {
				lines = append(lines, x.crier.out("dsh web: listening on http://x/?token="+testToken("planted "+strconv.Itoa(i))))
			}
			x.logs.write("0.log", lines...)

			var err error
			for range planted {
				if _, err = x.h.Cookie(context.Background(), x.target); err == nil {
					break
				}
				x.advance(time.Minute) // past the failure cache and the user's handshake budget
			}
			if err != nil {
				t.Fatalf("locked out after %d handshakes and %d exchanges: %v", planted, x.app.exchanges.Load(), err)
			}
			if n := x.app.exchanges.Load(); n > 2 {
				t.Errorf("%d exchanges before the real token, want at most 2", n)
			}
		})
	}
}
