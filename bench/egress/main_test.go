package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestSmokeShape: one short round prints every figure.
func TestSmokeShape(t *testing.T) {
	var out bytes.Buffer
	o := options{Rounds: 1, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond, Conns: 4, Streams: 3}
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"direct  p50", "egress  p50", "added p50 latency", "first token via egress", "added first-token delay"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
