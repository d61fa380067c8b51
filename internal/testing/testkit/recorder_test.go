package testkit

import (
	"sync"
	"testing"
)

func TestRecorder(t *testing.T) {
	var r Recorder[string]
	if got := r.Last(); got != "" {
		t.Errorf("Last before any record = %q, want the zero value", got)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { r.Add("early"); _ = r.Last() })
	}
	wg.Wait()
	r.Add("latest")
	if got := r.Last(); got != "latest" {
		t.Errorf("Last = %q, want latest", got)
	}
}
