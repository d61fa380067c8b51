package logbuf

import (
	"strings"
	"sync"
	"testing"
)

func TestConcurrentWritesAllKept(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "line\n"); n != 800 || len(b.Bytes()) != 800*5 {
		t.Errorf("%d lines, %d bytes; want 800 lines", n, len(b.Bytes()))
	}
}
