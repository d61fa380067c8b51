package nodeproxyd

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/handshake"
)

// validateHandshake checks the launch-token settings, naming each by its
// environment variable.
func (c Config) validateHandshake() []error {
	var errs []error
	check := func(env string, o handshake.Options) {
		if err := o.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", env, err))
		}
	}
	switch c.TokenSource {
	case handshake.SourceLog:
		check("TOKEN_PATTERN", handshake.Options{TokenPattern: c.TokenPattern})
		check("TOKEN_STREAM", handshake.Options{TokenStream: c.TokenStream})
	case handshake.SourceFile:
		if c.KubeletPodsDir == "" || c.TokenFile == "" {
			errs = append(errs, errors.New("TOKEN_SOURCE=file needs KUBELET_PODS_DIR and TOKEN_FILE"))
		}
		check("KUBELET_PODS_DIR", handshake.Options{PodsRoot: c.KubeletPodsDir})
		check("TOKEN_FILE", handshake.Options{TokenFile: c.TokenFile})
		if c.TokenPattern != "" {
			errs = append(errs, errors.New("TOKEN_PATTERN applies to TOKEN_SOURCE=log only"))
		}
	default:
		errs = append(errs, fmt.Errorf("TOKEN_SOURCE %q must be %s or %s", c.TokenSource, handshake.SourceLog, handshake.SourceFile))
	}
	return errs
}

// handshakeOptions hands the launch-token settings to the handshaker.
func (c Config) handshakeOptions(log *slog.Logger, reg prometheus.Registerer) handshake.Options {
	return handshake.Options{
		TokenSource: c.TokenSource,
		LogRoot:     c.LogRoot, TailLines: c.LogTailLines,
		TokenPattern: c.TokenPattern, TokenStream: c.TokenStream,
		PodsRoot: c.KubeletPodsDir, TokenFile: c.TokenFile,
		Timeout: c.HandshakeTimeout, Logger: log, Registerer: reg,
	}
}
