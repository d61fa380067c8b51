package settings

import (
	"log/slog"

	"k8s.io/klog/v2"
)

// oneLogFormat sends every other logger in the process through log until
// restore is called, so stderr carries only its JSON lines: client-go's
// own (klog: leader election, watch and list errors, as
// component=client-go) and anything written with the standard log package.
func oneLogFormat(log *slog.Logger) (restore func()) {
	prev := slog.Default()
	klog.SetSlogLogger(log.With("component", "client-go"))
	slog.SetDefault(log)
	return func() {
		klog.ClearLogger()
		slog.SetDefault(prev)
	}
}
