package nodeproxyd

import (
	"testing"

	"github.com/sandgate/sandgate/internal/requestpath/egress"
)

func TestEgressSettings(t *testing.T) {
	const providers = `[{"name":"openai","base_url":"https://api.openai.com/v1"}]`
	tests := []struct {
		name    string
		env     map[string]string
		enabled bool
		wantErr string
	}{
		{"off without providers", map[string]string{}, false, ""},
		{"on with providers", map[string]string{"EGRESS_PROVIDERS": providers}, true, ""},
		{"bad providers", map[string]string{"EGRESS_PROVIDERS": `[{"name":"x","base_url":"ftp://x"}]`}, true, "EGRESS_PROVIDERS"},
		{"same port as the proxy", map[string]string{"EGRESS_PROVIDERS": providers, "EGRESS_ADDR": ":8080"}, true, "EGRESS_ADDR"},
		{"negative budget", map[string]string{"EGRESS_PROVIDERS": providers, "EGRESS_TOKENS_PER_DAY": "-1"}, true, "EGRESS_TOKENS_PER_DAY"},
		{"no connections per client", map[string]string{"EGRESS_PROVIDERS": providers, "EGRESS_MAX_CONNS_PER_CLIENT": "0"}, true, "EGRESS_MAX_CONNS_PER_CLIENT"},
		{"bad providers ignored when off", map[string]string{"EGRESS_ADDR": ":8080"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := validOrRefused(t, map[string]string{"NODE_NAME": "n1"}, tt.env, tt.wantErr)
			if c.Egress.enabled() != tt.enabled {
				t.Errorf("enabled = %v, want %v", c.Egress.enabled(), tt.enabled)
			}
			if tt.wantErr == "" && c.Egress.MaxConnsPerClient != egress.DefaultMaxConnsPerClient {
				t.Errorf("connections per client = %d, want the default %d", c.Egress.MaxConnsPerClient, egress.DefaultMaxConnsPerClient)
			}
		})
	}
}
