package settings

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2"

	"github.com/sandgate/sandgate/internal/testing/logbuf"
)

func TestServeExitCodes(t *testing.T) {
	ok := func() error { return nil }
	for _, tt := range []struct {
		name     string
		loadErr  error
		validate func() error
		serveErr error
		code     int
		stderr   string
	}{
		{"help", flag.ErrHelp, ok, nil, 0, ""},
		{"version", ErrVersion, ok, nil, 0, ""},
		{"bad flag", errors.New("flag provided but not defined: -x"), ok, nil, 2, "cmd: flag provided but not defined"},
		{"invalid configuration", nil, func() error { return errors.New("NAMESPACE must not be empty") }, nil, 2, "cmd: invalid configuration:\nNAMESPACE"},
		{"serve fails", nil, ok, errors.New("listen: in use"), 1, `"msg":"exit","error":"listen: in use"`},
		{"clean shutdown", nil, ok, nil, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			served := false
			code := Serve("cmd", &stderr, tt.loadErr, tt.validate, "info", func(log *slog.Logger) error {
				served = true
				return tt.serveErr
			})
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tt.code, tt.stderr)
			}
			if want := tt.loadErr == nil && tt.code != 2; served != want {
				t.Errorf("served %v, want %v", served, want)
			}
		})
	}
}

// TestClientGoLinesFollowTheRunningServe: client-go's klog lines go to the
// stderr of the Serve that runs, as JSON with component=client-go, and
// nowhere once it has returned; two Serves in one process (as the binaries'
// tests run them) do not race on klog's logger.
func TestClientGoLinesFollowTheRunningServe(t *testing.T) {
	var first, second logbuf.Buffer
	var wg sync.WaitGroup
	for _, stderr := range []*logbuf.Buffer{&first, &second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Serve("cmd", stderr, nil, func() error { return nil }, "info", func(*slog.Logger) error {
				klog.InfoS("watch restarted", "resource", "pods")
				return nil
			})
		}()
	}
	wg.Wait()
	klog.InfoS("after every serve")
	klog.Flush()
	all := first.String() + second.String()
	if !strings.Contains(all, `"component":"client-go"`) || !strings.Contains(all, `"msg":"watch restarted"`) {
		t.Errorf("client-go's line is not among the JSON lines: %q", all)
	}
	if strings.Contains(all, "after every serve") {
		t.Errorf("a client-go line after Serve returned reached its stderr: %q", all)
	}
}
