package monitoring_test

import (
	"errors"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/authapi"
	"github.com/sandgate/sandgate/internal/buildinfo"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/nodeproxy"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sweeper"
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

// noDirectory and noVerifier satisfy the node proxy's required
// collaborators; nothing is served here.
type noDirectory struct{}

func (noDirectory) Lookup(string) (informer.Entry, error) {
	return informer.Entry{}, errors.New("no directory in this test")
}

type noVerifier struct{}

func (noVerifier) Verify(string) (jwt.Claims, error) {
	return jwt.Claims{}, errors.New("no verifier in this test")
}

func (noVerifier) VerifyIgnoringExpiry(string) (jwt.Claims, error) {
	return jwt.Claims{}, errors.New("no verifier in this test")
}

// exportedMetrics builds the collectors of both binaries through the
// packages' constructors, as cmd/authapi and cmd/nodeproxy do, and returns
// the metric names they register.
func exportedMetrics(t *testing.T) recorder {
	t.Helper()
	reg := recorder{}
	authapi.NewMetrics(reg)
	if err := buildinfo.Register(reg, "authapi"); err != nil {
		t.Fatal(err)
	}
	// Clients for a server that is never called: New does not list or watch.
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandboxapi.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sweeper.New(sweeper.Options{
		Namespace: "sandgate", Identity: sweeper.Identity("authapi-0", "10.0.0.1:8081"),
		Sandboxes: sb.Sandboxes("sandgate"), Claims: sb.SandboxClaims("sandgate"), Leases: kube.CoordinationV1(),
		Registerer: reg,
	}); err != nil {
		t.Fatalf("build sweeper: %v", err)
	}
	hs, err := handshake.New(handshake.Options{LogRoot: t.TempDir(), Registerer: reg})
	if err != nil {
		t.Fatalf("build handshaker: %v", err)
	}
	t.Cleanup(func() { hs.Close() })
	if _, err := activity.NewReporter(activity.ReporterOptions{
		Tracker: activity.New(activity.Options{}), Node: "n1", URL: "http://127.0.0.1:1/internal/v1/activity",
		Registerer: reg,
	}); err != nil {
		t.Fatalf("build activity reporter: %v", err)
	}
	if _, err := nodeproxy.New(nodeproxy.Options{
		NodeName: "n1", AuthAPI: "http://127.0.0.1:1",
		Directory: noDirectory{}, Verifier: noVerifier{}, Handshaker: hs,
		Registerer: reg,
	}); err != nil {
		t.Fatalf("build node proxy: %v", err)
	}
	return reg
}
