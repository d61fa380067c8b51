package buildinfo

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg, "nodeproxy"); err != nil {
		t.Fatal(err)
	}
	checkBuildInfo(t, reg, "nodeproxy")
	if err := Register(reg, "nodeproxy"); err == nil {
		t.Error("registering twice did not fail")
	}
}

func TestRegistry(t *testing.T) {
	reg := Registry("authapi")
	checkBuildInfo(t, reg, "authapi")
	for _, name := range []string{"go_goroutines", "process_start_time_seconds"} {
		n, err := testutil.GatherAndCount(reg, name)
		if err != nil || n != 1 {
			t.Errorf("%s: %d series, err %v; want the Go and process collectors registered", name, n, err)
		}
	}
}

// checkBuildInfo fails t unless reg gathers component's sandgate_build_info.
func checkBuildInfo(t *testing.T, reg prometheus.Gatherer, component string) {
	t.Helper()
	i := Read()
	want := `# HELP sandgate_build_info The running build: always 1, with the version, revision and Go version as labels.
# TYPE sandgate_build_info gauge
sandgate_build_info{component="` + component + `",goversion="` + runtime.Version() + `",revision="` + i.Revision + `",version="` + i.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sandgate_build_info"); err != nil {
		t.Error(err)
	}
}

func TestVersionLine(t *testing.T) {
	got := Info{Version: "v0.4.0", Revision: "abc123", GoVersion: "go1.26.0"}.String()
	if got != "version v0.4.0, revision abc123, go1.26.0" {
		t.Errorf("String() = %q", got)
	}
}
