package settings

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// Serve is what every sandgate server does once its settings are loaded:
// --help exits 0; a load or validation error is a usage error, exit 2;
// otherwise serve runs with a JSON logger on stderr at logLevel (which
// validate has checked), shared by client-go and the standard library's
// loggers while it runs, and its failure exits 1.
func Serve(name string, stderr io.Writer, loadErr error, validate func() error, logLevel string, serve func(*slog.Logger) error) int {
	if code, ok := Loaded(name, stderr, loadErr, validate); !ok {
		return code
	}
	level, _ := Level(logLevel)
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	defer oneLogFormat(log)()
	if err := serve(log); err != nil {
		log.Error("exit", "error", err)
		return 1
	}
	return 0
}

// Loaded is the first half of every sandgate command: it reports ok when
// the settings loaded and validate accepts them; otherwise it returns the
// exit code, 0 for --help and --version and 2 for a load or validation
// error, which it has written to stderr under the command's name.
func Loaded(name string, stderr io.Writer, loadErr error, validate func() error) (code int, ok bool) {
	if errors.Is(loadErr, flag.ErrHelp) || errors.Is(loadErr, ErrVersion) {
		return 0, false
	}
	if loadErr != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, loadErr)
		return 2, false
	}
	if err := validate(); err != nil {
		fmt.Fprintf(stderr, "%s: invalid configuration:\n%v\n", name, err)
		return 2, false
	}
	return 0, true
}
