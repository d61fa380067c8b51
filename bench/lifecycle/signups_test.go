package lifecycle

import (
	"net/http"
	"testing"
	"time"

	"github.com/sandgate/sandgate/bench/load"
)

// TestSummariseSignupsPairs checks that each account's ready time comes
// from its own signup: answer times in an order sorting would change, and
// pending accounts seen Ready at times only their own start explains.
func TestSummariseSignupsPairs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	done := []signup{
		{account: account{user: "a"}, began: t0, took: 9 * time.Second, code: http.StatusAccepted},
		{account: account{user: "b"}, began: t0.Add(time.Second), took: 1 * time.Second, code: http.StatusCreated},
		{account: account{user: "c"}, began: t0.Add(2 * time.Second), took: 7 * time.Second, code: http.StatusAccepted},
		{account: account{user: "d"}, began: t0.Add(3 * time.Second), took: 2 * time.Second, code: http.StatusCreated},
		{account: account{user: "e"}, began: t0.Add(4 * time.Second), took: 8 * time.Second, code: http.StatusAccepted},
	}
	seen := map[string]time.Time{
		"a": t0.Add(30 * time.Second), // 30s after its start
		"c": t0.Add(42 * time.Second), // 40s
		// e never seen Ready
	}
	var r Result
	r.summariseSignups(done, seen)
	s := time.Second
	want := Result{
		Created:  2,
		Signup:   load.Summarise([]time.Duration{1 * s, 2 * s}),
		Answered: load.Summarise([]time.Duration{9 * s, 1 * s, 7 * s, 2 * s, 8 * s}),
		Ready:    load.Summarise([]time.Duration{30 * s, 1 * s, 40 * s, 2 * s}),
	}
	if r != want {
		t.Errorf("summariseSignups:\n got %+v\nwant %+v", r, want)
	}
	if want.Ready.P50 != 30*s || want.Ready.Max != 40*s {
		t.Fatalf("the expected figures do not tell pairs apart: %+v", want.Ready)
	}
}
