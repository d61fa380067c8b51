package nodeproxy

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// testProxySecret is the SSO proxy's secret in these tests.
var testProxySecret = strings.Repeat("s", MinAuthProxySecretBytes)

// basicProof is the Authorization oauth2-proxy sends for user with
// --pass-basic-auth and --basic-auth-password=secret.
func basicProof(user, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+secret))
}

// TestAuthProxyProof: with an SSO proxy secret, the identity header (and
// the other identity headers beside it) reach the auth API only on a
// request that proves it with the secret for exactly that user, whatever
// the peer's address, TrustedProxies included; the proof itself never
// reaches the auth API or an app, and a bearer token still does its job.
func TestAuthProxyProof(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted bool   // the peer is in TrustedProxies
		user    string // X-Forwarded-User sent; "" sends none
		auth    string // Authorization sent; "" sends none
		kept    bool
	}{
		{name: "right proof", user: "alice", auth: basicProof("alice", testProxySecret), kept: true},
		{name: "right proof from a trusted proxy", trusted: true, user: "alice", auth: basicProof("alice", testProxySecret), kept: true},
		{name: "right proof, scheme in lower case", user: "alice", auth: "basic " + strings.TrimPrefix(basicProof("alice", testProxySecret), "Basic "), kept: true},
		{name: "right proof of a user with a colon", user: "a:b", auth: basicProof("a:b", testProxySecret), kept: true},
		{name: "wrong password", user: "alice", auth: basicProof("alice", strings.Repeat("t", MinAuthProxySecretBytes))},
		{name: "password a prefix of the secret", user: "alice", auth: basicProof("alice", testProxySecret[:5])},
		{name: "password longer than the secret", user: "alice", auth: basicProof("alice", testProxySecret+"x")},
		{name: "proof of another user", user: "alice", auth: basicProof("bob", testProxySecret)},
		{name: "proof of a user the header starts with", user: "alice", auth: basicProof("alice:"+testProxySecret[:1], testProxySecret)},
		{name: "no proof", user: "alice"},
		{name: "no proof from a trusted proxy", trusted: true, user: "alice"},
		{name: "malformed base64", user: "alice", auth: "Basic " + basicProof("alice", testProxySecret)[6:] + "!"},
		{name: "unpadded base64", user: "alice", auth: strings.TrimRight(basicProof("alice", testProxySecret), "=")},
		{name: "no space after the scheme", user: "alice", auth: "Basic" + basicProof("alice", testProxySecret)[6:]},
		{name: "another scheme", user: "alice", auth: "Digest " + basicProof("alice", testProxySecret)[6:]},
		{name: "empty user", user: "", auth: basicProof("", testProxySecret)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{modify: func(o *Options) {
				o.AuthProxyHeader = "X-Forwarded-User"
				o.AuthProxySecret = []byte(testProxySecret)
				if tc.trusted {
					o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
				}
			}})
			hdr := map[string]string{"X-Forwarded-Email": "alice@example.com"}
			if tc.user != "" {
				hdr["X-Forwarded-User"] = tc.user
			}
			if tc.auth != "" {
				hdr["Authorization"] = tc.auth
			}
			readAll(t, h.do(http.MethodPost, "node-a", "/signup", nil, hdr))
			seen := h.auth.seen.Last().Header
			want := []string(nil)
			if tc.kept {
				want = []string{tc.user}
			}
			if got := seen.Values("X-Forwarded-User"); !equalStrings(got, want) {
				t.Errorf("auth API saw X-Forwarded-User %q, want %q", got, want)
			}
			if got := seen.Get("X-Forwarded-Email"); (got != "") != tc.kept {
				t.Errorf("auth API saw X-Forwarded-Email %q, want kept=%v", got, tc.kept)
			}
			if v := seen.Values("Authorization"); len(v) != 0 {
				t.Errorf("auth API saw Authorization %q", v)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n") && len(a) == len(b)
}

// TestAuthProxyProofNeverReachesApps: the proof, right or wrong, never
// reaches an app, on the pod's node or through a hop; a session cookie
// still opens the app beside it.
func TestAuthProxyProofNeverReachesApps(t *testing.T) {
	h := newHarness(t, harnessOpts{peers: true, modify: func(o *Options) {
		o.AuthProxyHeader = "X-Forwarded-User"
		o.AuthProxySecret = []byte(testProxySecret)
	}})
	h.addUser("alice", "node-a")
	for _, node := range []string{"node-a", "node-b"} {
		for _, auth := range []string{basicProof("alice", testProxySecret), basicProof("alice", "wrong")} {
			e := echo(t, h.get(node, "/u/alice/api/echo", map[string]string{
				"Cookie": cookie(h.session("alice")), "X-Forwarded-User": "alice", "Authorization": auth,
			}))
			for _, name := range []string{"Authorization", "X-Forwarded-User"} {
				if v := e.Headers.Values(name); len(v) != 0 {
					t.Errorf("via %s: the app saw %s: %q", node, name, v)
				}
			}
		}
	}
}

// TestAuthProxyBearerKept: with an SSO proxy secret, a bearer token is
// not the proof and still reaches the auth API (a hop's session, a
// client's token); it asserts no identity.
func TestAuthProxyBearerKept(t *testing.T) {
	h := newHarness(t, harnessOpts{modify: func(o *Options) {
		o.AuthProxyHeader = "X-Forwarded-User"
		o.AuthProxySecret = []byte(testProxySecret)
	}})
	readAll(t, h.do(http.MethodPost, "node-a", "/login", nil, map[string]string{"Authorization": "Bearer abc.def", "X-Forwarded-User": "alice"}))
	seen := h.auth.seen.Last().Header
	if got := seen.Get("Authorization"); got != "Bearer abc.def" {
		t.Errorf("auth API saw Authorization %q, want the bearer token", got)
	}
	if got := seen.Values("X-Forwarded-User"); len(got) != 0 {
		t.Errorf("auth API saw X-Forwarded-User %q beside a bearer token", got)
	}
}

// FuzzParseBasic: parseBasic accepts only "Basic " (any case) and the
// canonical padded base64 of what it returns, and provesUser holds only
// for exactly user, a colon and the secret.
func FuzzParseBasic(f *testing.F) {
	for _, s := range []string{
		basicProof("alice", testProxySecret), basicProof("a:b", "c"), "basic YTpi", "Basic", "Basic ", "Basic YQ", "Basic YQ==",
		"Basic YQ=", "Basic  YTpi", "Bearer YTpi", "Basic YTpi\n",
	} {
		f.Add([]byte(s), []byte("alice"))
	}
	secret := []byte(testProxySecret)
	f.Fuzz(func(t *testing.T, v, user []byte) {
		userPass, ok := parseBasic(v)
		if !ok {
			return
		}
		if !bytes.EqualFold(v[:6], []byte("basic ")) || base64.StdEncoding.EncodeToString(userPass) != string(v[6:]) {
			t.Fatalf("parseBasic(%q) = %q, not its canonical encoding", v, userPass)
		}
		want := string(user) + ":" + testProxySecret
		if provesUser(userPass, user, secret) != (len(user) > 0 && string(userPass) == want) {
			t.Fatalf("provesUser(%q, %q) = %v", userPass, user, !(string(userPass) == want))
		}
	})
}
