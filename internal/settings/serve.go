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
// validate has checked) and its failure exits 1.
func Serve(name string, stderr io.Writer, loadErr error, validate func() error, logLevel string, serve func(*slog.Logger) error) int {
	if errors.Is(loadErr, flag.ErrHelp) {
		return 0
	}
	if loadErr != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, loadErr)
		return 2
	}
	if err := validate(); err != nil {
		fmt.Fprintf(stderr, "%s: invalid configuration:\n%v\n", name, err)
		return 2
	}
	level, _ := Level(logLevel)
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	if err := serve(log); err != nil {
		log.Error("exit", "error", err)
		return 1
	}
	return 0
}
