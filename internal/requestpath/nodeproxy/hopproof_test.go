package nodeproxy

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestHopTrustNeedsAValidProof: node-b trusts the forwarded headers of a
// hop only when its X-Sandgate-Hop-Auth proof verifies with the shared
// hop key for exactly this request; every other hop, even from a node's
// address, is served as a client's request (its X-Forwarded-For replaced
// by its address) and counted as refused, also from an address in
// TrustedProxies. Without a hop key the source address decides, as
// before.
func TestHopTrustNeedsAValidProof(t *testing.T) {
	const (
		forged  = "198.51.100.7"
		path    = "/u/carol/api/echo?q=1"
		trusted = forged + ", 127.0.0.1"
		client  = "127.0.0.1"
	)
	// claim is the hop node-a would send for path.
	claim := hopClaim{
		method: http.MethodGet, uri: path, host: testHost, user: "carol", from: "node-a", to: "node-b",
		xff: forged, proto: "http", fwdHost: testHost,
	}
	for _, tc := range []struct {
		name     string
		noKey    bool // node-b runs without a hop key
		fromNode bool // the sender's address is a node's
		proxy    bool // the sender's address is in TrustedProxies
		proof    func(h *harness) []string
		hdr      map[string]string // headers set after signing
		want     []string          // X-Forwarded-For the app sees, per request
		refused  float64
	}{
		{name: "valid proof", fromNode: true, proof: signed(claim), want: []string{trusted}},
		{name: "valid proof from a non-node address", proof: signed(claim), want: []string{trusted}},
		{name: "no proof from a node", fromNode: true, proof: none, want: []string{client}, refused: 1},
		{name: "forged MAC", fromNode: true, proof: func(h *harness) []string {
			a := newHopAuth([]byte(strings.Repeat("k", MinHopKeyBytes)), h.clock.Now, hopNonces)
			return []string{a.sign(claim)}
		}, want: []string{client}, refused: 1},
		{name: "replayed nonce", fromNode: true, proof: func(h *harness) []string {
			p := signed(claim)(h)[0]
			return []string{p, p}
		}, want: []string{trusted, client}, refused: 1},
		{name: "old timestamp", fromNode: true, proof: func(h *harness) []string {
			old := func() time.Time { return h.clock.Now().Add(-hopAuthWindow - 2*time.Second) }
			return []string{newHopAuth(testHopKey, old, hopNonces).sign(claim)}
		}, want: []string{client}, refused: 1},
		{name: "MAC of another URI", fromNode: true, proof: func(h *harness) []string {
			other := claim
			other.uri = "/u/carol/api/other"
			return signed(other)(h)
		}, want: []string{client}, refused: 1},
		{name: "MAC of another node", fromNode: true, proof: func(h *harness) []string {
			other := claim
			other.to = "node-c"
			return signed(other)(h)
		}, want: []string{client}, refused: 1},
		{name: "forwarded header changed after signing", fromNode: true, proof: signed(claim),
			hdr: map[string]string{"X-Forwarded-For": "203.0.113.9"}, want: []string{client}, refused: 1},
		{name: "malformed proof", fromNode: true, proof: func(*harness) []string { return []string{"v1.1.2.3"} },
			want: []string{client}, refused: 1},
		{name: "valid proof from a trusted proxy's address", proxy: true, proof: signed(claim), want: []string{trusted}},
		{name: "no proof from a trusted proxy's address", proxy: true, fromNode: true, proof: none, want: []string{client}, refused: 1},
		{name: "forged MAC from a trusted proxy's address", proxy: true, proof: func(h *harness) []string {
			return []string{newHopAuth([]byte(strings.Repeat("k", MinHopKeyBytes)), h.clock.Now, hopNonces).sign(claim)}
		}, want: []string{client}, refused: 1},
		{name: "no hop key: a trusted proxy's address is trusted", noKey: true, proxy: true, proof: none, want: []string{trusted}},
		{name: "no hop key: a node's address is trusted", noKey: true, fromNode: true, proof: none, want: []string{trusted}},
		{name: "no hop key: a non-node address is not", noKey: true, proof: none, want: []string{client}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{peers: true, modify: func(o *Options) {
				if tc.noKey {
					o.HopKey = nil
				}
				if tc.proxy {
					o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
				}
			}})
			h.addUser("carol", "node-b")
			if tc.fromNode {
				h.dir.mu.Lock()
				h.dir.nodeIPs[client] = true
				h.dir.mu.Unlock()
			}
			for i, proof := range tc.proof(h) {
				hdr := map[string]string{
					"Cookie": cookie(h.session("carol")), hopHeader: "node-a",
					"X-Forwarded-For": forged, "X-Forwarded-Proto": "http", "X-Forwarded-Host": testHost,
				}
				if proof != "" {
					hdr[hopAuthHeader] = proof
				}
				for k, v := range tc.hdr {
					hdr[k] = v
				}
				e := echo(t, h.get("node-b", path, hdr))
				if got := e.Headers.Get("X-Forwarded-For"); got != tc.want[i] {
					t.Errorf("request %d: app saw X-Forwarded-For %q, want %q", i, got, tc.want[i])
				}
				if v := e.Headers.Get(hopAuthHeader); v != "" {
					t.Errorf("the app saw the hop proof %q", v)
				}
			}
			if got := testutil.ToFloat64(h.nodes["node-b"].proxy.m.hops.WithLabelValues("in", "refused")); got != tc.refused {
				t.Errorf("refused hops %v, want %v", got, tc.refused)
			}
		})
	}
}

// signed proves claim with the harness key at the harness clock.
func signed(c hopClaim) func(*harness) []string {
	return func(h *harness) []string { return []string{newHopAuth(testHopKey, h.clock.Now, hopNonces).sign(c)} }
}

func none(*harness) []string { return []string{""} }

// TestHopProofChecks: verify accepts a proof once, within the window
// either way, for the claim it was made for; and when the nonce cache is
// full, a proof no newer than a nonce it forgot inside the window is
// refused, as it could be a replay of it.
func TestHopProofChecks(t *testing.T) {
	clk := testkit.NewOffsetClock()
	c := hopClaim{method: "GET", uri: "/u/a/", host: "h", user: "a", from: "n1", to: "n2", xff: "x", proto: "http", fwdHost: "h"}
	at := func(d time.Duration) func() time.Time { return func() time.Time { return clk.Now().Add(d) } }
	sign := func(d time.Duration) string { return newHopAuth(testHopKey, at(d), hopNonces).sign(c) }
	for _, tc := range []struct {
		name  string
		proof string
		claim hopClaim
		want  error
	}{
		{"fresh", sign(0), c, nil},
		{"29s ahead", sign(29 * time.Second), c, nil},
		{"29s behind", sign(-29 * time.Second), c, nil},
		{"31s behind", sign(-31 * time.Second), c, errHopStale},
		{"31s ahead", sign(31 * time.Second), c, errHopStale},
		{"another method", sign(0), hopClaim{method: "POST", uri: c.uri, host: c.host, user: c.user, from: c.from, to: c.to, xff: c.xff, proto: c.proto, fwdHost: c.fwdHost}, errHopForged},
		{"fields shifted", sign(0), hopClaim{method: "GE", uri: "T/u/a/", host: c.host, user: c.user, from: c.from, to: c.to, xff: c.xff, proto: c.proto, fwdHost: c.fwdHost}, errHopForged},
		{"empty", "", c, errHopMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newHopAuth(testHopKey, clk.Now, hopNonces)
			if err := a.verify(tc.proof, tc.claim); !errors.Is(err, tc.want) {
				t.Errorf("verify = %v, want %v", err, tc.want)
			}
		})
	}

	t.Run("bounded nonce cache", func(t *testing.T) {
		a := newHopAuth(testHopKey, clk.Now, 2)
		first, second := sign(-10*time.Second), sign(-5*time.Second)
		for _, p := range []string{first, second, sign(0)} { // the third forgets first
			if err := a.verify(p, c); err != nil {
				t.Fatalf("verify: %v", err)
			}
		}
		if err := a.verify(first, c); !errors.Is(err, errHopReplayed) {
			t.Errorf("replay of a forgotten nonce: %v, want refused", err)
		}
		if err := a.verify(sign(-12*time.Second), c); !errors.Is(err, errHopReplayed) {
			t.Errorf("new proof older than a forgotten one: %v, want refused", err)
		}
		if err := a.verify(sign(0), c); err != nil {
			t.Errorf("new proof: %v", err)
		}
	})
}

// TestHopAuthSentAndVerified: node-a's hops to node-b, HTTP and
// WebSocket, with paths and queries that need care, carry a proof node-b
// verifies, so node-b keeps node-a's X-Forwarded-For (the client's
// address, then node-a's); hops between proxies with different keys are
// served but untrusted.
func TestHopAuthSentAndVerified(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keyOfB  []byte
		wantXFF string
		result  string
	}{
		{"shared key", testHopKey, "127.0.0.1, 127.0.0.1", "authenticated"},
		{"different keys", []byte(strings.Repeat("b", MinHopKeyBytes)), "127.0.0.1", "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{peers: true, modify: func(o *Options) {
				if o.NodeName == "node-b" {
					o.HopKey = tc.keyOfB
				}
			}})
			h.addUser("carol", "node-b")
			h.dir.mu.Lock()
			h.dir.nodeIPs["127.0.0.1"] = true // node-a's address: no trust by address with a key
			h.dir.mu.Unlock()
			hdr := map[string]string{"Cookie": cookie(h.session("carol"))}
			for _, path := range []string{"/u/carol/api/echo", "/u/carol/api/echo?q=a%2Fb&r=%20x", "/u/carol/api/echo/%7Etilde"} {
				e := echo(t, h.get("node-a", path, hdr))
				if got := e.Headers.Get("X-Forwarded-For"); got != tc.wantXFF {
					t.Errorf("%s: app saw X-Forwarded-For %q, want %q", path, got, tc.wantXFF)
				}
			}
			c, _, err := h.dialWS("node-a", "/u/carol/api/ws?x=%2F", http.Header{"Cookie": {cookie(h.session("carol"))}})
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			if got := testutil.ToFloat64(h.nodes["node-b"].proxy.m.hops.WithLabelValues("in", tc.result)); got != 4 {
				t.Errorf("node-b counted %v hops %s, want 4", got, tc.result)
			}
		})
	}
}

// FuzzParseHopProof: the parser of X-Sandgate-Hop-Auth never panics, and
// accepts only the canonical form of a proof.
func FuzzParseHopProof(f *testing.F) {
	a := newHopAuth(testHopKey, time.Now, hopNonces)
	f.Add(a.sign(hopClaim{}))
	for _, s := range []string{"", "v1", "v1...", "v2.1.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"v1.01.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"v1.-1.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"v1.99999999999999999999.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"v1.1.AAAAAAAAAAAAAAAAAAAAAB.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p, err := parseHopProof(v)
		if err != nil {
			if !errors.Is(err, errHopMalformed) {
				t.Errorf("parse %q: %v", v, err)
			}
			return
		}
		if p.String() != v {
			t.Errorf("parse %q accepted a non-canonical form of %q", v, p.String())
		}
	})
}
