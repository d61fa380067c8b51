package monitoring_test

import (
	"errors"
	"io"
	"log/slog"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/internal/accountpath/authapid"
	"github.com/sandgate/sandgate/internal/buildinfo"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxyd"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// recorder is a Registerer that keeps the name of every metric registered
// on it.
type recorder map[string]bool

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			return errors.New("no fqName in " + d.String())
		}
		r[m[1]] = true
	}
	return nil
}

func (r recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r recorder) Unregister(prometheus.Collector) bool { return false }

// Gather gathers nothing: the names are what this test wants.
func (r recorder) Gather() ([]*dto.MetricFamily, error) { return nil, nil }

// exportedMetrics assembles both binaries as cmd/authapi and cmd/nodeproxy
// do, on one recorder, and returns the metric names they register.
func exportedMetrics(t *testing.T) recorder {
	t.Helper()
	reg := recorder{}
	for _, name := range []string{"authapi", "nodeproxy"} {
		if err := buildinfo.Register(reg, name); err != nil {
			t.Fatal(err)
		}
	}
	// Clients for a server that is never called: nothing runs.
	kube, sb := testkit.Clients(t, &rest.Config{Host: "http://127.0.0.1:1"})
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))

	ac := authapid.Defaults()
	ac.ListenAddr, ac.OpsAddr, ac.Namespace = "127.0.0.1:0", "localhost:0", "sandgate"
	auth, err := authapid.Assemble(ac, authapid.Deps{Logger: log, Registry: reg, Kube: kube, Sandboxes: sb})
	if err != nil {
		t.Fatalf("assemble auth API: %v", err)
	}
	auth.Close()

	nc := nodeproxyd.Defaults()
	nc.NodeName, nc.ListenAddr, nc.OpsAddr, nc.LogRoot = "n1", "127.0.0.1:0", "localhost:0", t.TempDir()
	nc.AuthAPIURL, nc.SATokenFile = "http://127.0.0.1:1", ""
	node, err := nodeproxyd.Assemble(nc, nodeproxyd.Deps{Logger: log, Registry: reg, Sources: nodeproxyd.Clients{Kube: kube, Sandboxes: sb}})
	if err != nil {
		t.Fatalf("assemble node proxy: %v", err)
	}
	node.Close()
	return reg
}
