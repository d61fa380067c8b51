package settings

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"strings"
	"testing"
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
