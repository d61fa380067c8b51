// Package buildinfo says which sandgate build is running: the release
// version (set at link time), the source revision and the Go version,
// for --version and the sandgate_build_info metric.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// version is set with -ldflags "-X github.com/sandgate/sandgate/internal/buildinfo.version=v0.4.0".
var version = "dev"

// Info describes the running build.
type Info struct {
	Version, Revision, GoVersion string
}

// Read returns the running build's Info; the revision comes from the
// VCS stamp Go embeds, with "-dirty" for a modified tree, or "unknown".
func Read() Info {
	i := Info{Version: version, Revision: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return i
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && i.Revision != "unknown" {
		i.Revision += "-dirty"
	}
	return i
}

// String is the --version line of command name.
func (i Info) String() string {
	return fmt.Sprintf("version %s, revision %s, %s", i.Version, i.Revision, i.GoVersion)
}

// Registry returns a fresh registry holding the Go and process collectors
// and component's sandgate_build_info gauge: what a daemon serves on
// /metrics when it is given no registry of its own.
func Registry(component string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), gauge(component))
	return reg
}

// Register adds the constant gauge sandgate_build_info{component,version,revision,goversion} = 1
// to reg.
func Register(reg prometheus.Registerer, component string) error {
	if err := reg.Register(gauge(component)); err != nil {
		return fmt.Errorf("register sandgate_build_info: %w", err)
	}
	return nil
}

func gauge(component string) prometheus.Gauge {
	i := Read()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "sandgate", Name: "build_info",
		Help: "The running build: always 1, with the version, revision and Go version as labels.",
		ConstLabels: prometheus.Labels{
			"component": component, "version": i.Version, "revision": i.Revision, "goversion": i.GoVersion,
		},
	})
	g.Set(1)
	return g
}
