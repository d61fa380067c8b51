// Package platformtest starts the whole local platform for end-to-end
// tests: the simulated cluster on the test's real API server, the auth API
// and one node proxy per simulated node, the last two the shipped
// assemblies (internal/accountpath/authapid, internal/requestpath/nodeproxyd).
// Tests only.
package platformtest

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// The short idle timings that Options.ShortIdle sets, for tests that watch
// agents suspended and woken.
const (
	IdleTimeout    = 3 * time.Second
	ReportInterval = time.Second
	LeaseDuration  = 3 * time.Second
)

// Options shape a Platform. A zero duration leaves the assembly's default.
type Options struct {
	// Sim shapes the simulated cluster.
	Sim simtest.Options
	// AuthReplicas is how many auth API replicas run, 1 if zero; node
	// proxy i reports activity to and wakes through replica i mod
	// AuthReplicas.
	AuthReplicas int
	// Sweep runs each replica's leader-elected sweeper with the replica;
	// otherwise the sweepers are held apart (Platform.Sweepers) and run
	// only when a test runs them.
	Sweep bool
	// ShortIdle sets IdleTimeout, ReportInterval and a LeaseDuration lease
	// on the auth API and ReportInterval on the node proxies.
	ShortIdle bool
	// IdleCountsOpenConnections is the auth API's
	// IDLE_COUNTS_OPEN_CONNECTIONS.
	IdleCountsOpenConnections bool
	// BusyAllowance is the auth API's BUSY_ALLOWANCE.
	BusyAllowance time.Duration
	// EgressProviders and EgressKeysDir, when set, are the node proxies'
	// EGRESS_PROVIDERS and EGRESS_KEYS_DIR: each serves the egress
	// listener on its node's InternalIP (Node.Egress).
	EgressProviders, EgressKeysDir string
	// AllowedServiceAccounts is the auth API's
	// INTERNAL_ALLOWED_SERVICE_ACCOUNTS; empty is the node proxies' own
	// ServiceAccount. Without it the auth API refuses their internal calls
	// (wakes, renewals, activity reports) with 403.
	AllowedServiceAccounts string

	// Mode is the routing mode of the auth API and the node proxies; with
	// userorigin.Subdomain, UserDomain is their USER_DOMAIN and
	// PublicOrigin, given the node proxies' common port, their
	// PUBLIC_ORIGIN.
	Mode         userorigin.Mode
	UserDomain   string
	PublicOrigin func(port string) string
	// EntryCodeTTL is the auth API's entry codes' lifetime.
	EntryCodeTTL time.Duration
	// Admins is the auth API's ADMINS.
	Admins string

	// SessionTTL and AuthWakeTimeout are the auth API's session token
	// lifetime and wake timeout, NodeWakeTimeout the node proxies'.
	SessionTTL, AuthWakeTimeout, NodeWakeTimeout time.Duration
	// AuthClock is the auth API's clock; nil is time.Now.
	AuthClock func() time.Time

	// HopKey, if set, is every node proxy's hop key.
	HopKey []byte
	// ObserveNodeRequest sees every API request the node proxies make,
	// ObserveAuthRequest every one the auth API makes with its Sandboxes
	// client.
	ObserveNodeRequest, ObserveAuthRequest func(*http.Request)
}

// Platform is a running platform; everything stops when the test ends.
type Platform struct {
	CP  *controlplane.ControlPlane
	Sim *simtest.Env
	// Logs holds the auth API's and the node proxies' JSON log lines, Info
	// and above, each with its "process": the replica's pod name or the
	// node's name.
	Logs *logbuf.Buffer
	// AuthURLs and Sweepers are the auth API replicas' URLs and sweepers,
	// in replica order.
	AuthURLs []string
	Sweepers []*sweeper.Sweeper
	// Nodes are the node proxies, one per simulated node in order, each on
	// its node's InternalIP (127.0.1.<i+1>), all on Port.
	Nodes []*Node
	Port  string
}

// Start starts the platform and waits until every part is ready.
func Start(t *testing.T, o Options) *Platform {
	t.Helper()
	cp := testkit.ControlPlane(t)
	p := &Platform{CP: cp, Sim: simtest.Start(t, cp, o.Sim), Logs: &logbuf.Buffer{}}
	logger := slog.New(slog.NewJSONHandler(p.Logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for r := range max(o.AuthReplicas, 1) {
		p.startAuth(t, r, o, logger)
	}
	p.startNodes(t, o, logger)
	return p
}

// override sets *dst to v unless v is the zero value.
func override[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}
