package nodeproxyd

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/sandgate/sandgate/internal/requestpath/egress"
	"github.com/sandgate/sandgate/internal/settings"
)

// Egress: the node-local egress path for model-provider calls
// (internal/requestpath/egress, docs/egress.md). It runs only when EGRESS_PROVIDERS is
// set.

// EgressConfig is the egress listener's settings.
type EgressConfig struct {
	Addr              string
	Providers         string
	KeysDir           string
	LimitsFile        string
	RequestsPerMinute int
	TokensPerDay      int
	MaxBodyKB         int
	MaxConnsPerClient int
	BusyMax           time.Duration
}

func egressDefaults() EgressConfig {
	return EgressConfig{
		Addr: ":8090", KeysDir: "/etc/sandgate/provider-keys",
		RequestsPerMinute: 60, TokensPerDay: 2_000_000, MaxBodyKB: egress.DefaultMaxBodyBytes >> 10,
		MaxConnsPerClient: egress.DefaultMaxConnsPerClient, BusyMax: egress.DefaultBusyMax,
	}
}

func (e *EgressConfig) settings() []settings.Setting {
	return []settings.Setting{
		settings.Var("egress-providers", "EGRESS_PROVIDERS", "model providers the sandboxes on this node may call through EGRESS_ADDR, as a JSON list of {name, base_url, header, prefix, key, paths, headers}; empty serves no egress", settings.String(&e.Providers)),
		settings.Var("egress-addr", "EGRESS_ADDR", "listener for the sandboxes' provider calls (http://<node IP>:<port>/<provider>/...)", settings.String(&e.Addr)),
		settings.Var("egress-keys-dir", "EGRESS_KEYS_DIR", "the mounted provider-keys Secret: file <key> is a provider's shared key, <key>.<user> a user's own; read again when changed", settings.String(&e.KeysDir)),
		settings.Var("egress-limits-file", "EGRESS_LIMITS_FILE", "optional JSON file of per-user budgets ({\"default\":{...},\"users\":{\"<user>\":{\"requests_per_minute\":N,\"tokens_per_day\":N}}}); read again when changed", settings.String(&e.LimitsFile)),
		settings.Var("egress-requests-per-minute", "EGRESS_REQUESTS_PER_MINUTE", "each user's provider calls per minute unless the limits file says otherwise; 0 is unlimited", settings.Int(&e.RequestsPerMinute)),
		settings.Var("egress-tokens-per-day", "EGRESS_TOKENS_PER_DAY", "each user's provider tokens per UTC day unless the limits file says otherwise; 0 is unlimited", settings.Int(&e.TokensPerDay)),
		settings.Var("egress-max-body-kb", "EGRESS_MAX_BODY_KB", "largest provider call body (413 past it)", settings.Int(&e.MaxBodyKB)),
		settings.Var("egress-busy-max", "EGRESS_BUSY_MAX", "longest busy declaration an agent can send at once on EGRESS_ADDR/_sandgate/busy (a longer one is cut to it; the auth API's BUSY_ALLOWANCE bounds the day)", settings.Duration(&e.BusyMax)),
		settings.Var("egress-max-conns-per-client", "EGRESS_MAX_CONNS_PER_CLIENT", "connections one sandbox address may hold open to the egress listener; past it a new one is closed at once", settings.Int(&e.MaxConnsPerClient)),
	}
}

func (e EgressConfig) enabled() bool { return e.Providers != "" }

// validate checks the egress block when it is enabled; the other
// listeners' addresses must differ from EGRESS_ADDR.
func (e EgressConfig) validate(others ...string) []error {
	if !e.enabled() {
		return nil
	}
	var errs []error
	if _, err := egress.ParseProviders([]byte(e.Providers)); err != nil {
		errs = append(errs, fmt.Errorf("EGRESS_PROVIDERS: %w", err))
	}
	if _, _, err := net.SplitHostPort(e.Addr); err != nil {
		errs = append(errs, fmt.Errorf("EGRESS_ADDR %q is not host:port", e.Addr))
	}
	for _, o := range others {
		if o == e.Addr {
			errs = append(errs, fmt.Errorf("EGRESS_ADDR %q must differ from the other listeners", e.Addr))
		}
	}
	if e.KeysDir == "" {
		errs = append(errs, errors.New("EGRESS_KEYS_DIR must not be empty"))
	}
	if e.RequestsPerMinute < 0 || e.TokensPerDay < 0 {
		errs = append(errs, errors.New("EGRESS_REQUESTS_PER_MINUTE and EGRESS_TOKENS_PER_DAY must not be negative"))
	}
	if e.MaxConnsPerClient < 1 || e.MaxConnsPerClient > 4096 {
		errs = append(errs, fmt.Errorf("EGRESS_MAX_CONNS_PER_CLIENT %d must be 1-4096", e.MaxConnsPerClient))
	}
	if e.BusyMax <= 0 {
		errs = append(errs, fmt.Errorf("EGRESS_BUSY_MAX %v must be positive", e.BusyMax))
	}
	if e.MaxBodyKB < 1 {
		errs = append(errs, fmt.Errorf("EGRESS_MAX_BODY_KB %d must be at least 1", e.MaxBodyKB))
	}
	return errs
}
