package kubelet

import (
	"net/http"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/sim/agentapp"
)

// TestProbeRequest checks the probe as the sandbox template sends it: to
// the pod IP, with Host: localhost:<port>, which the app trusts on every
// listen address.
func TestProbeRequest(t *testing.T) {
	req, err := probeRequest(t.Context(), "127.101.0.7", 3080)
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != http.MethodGet || req.URL.String() != "http://127.101.0.7:3080"+agentapp.ProbePath || req.Host != "localhost:3080" {
		t.Errorf("probe %s %s Host %q; want GET http://127.101.0.7:3080%s Host localhost:3080", req.Method, req.URL, req.Host, agentapp.ProbePath)
	}
}
