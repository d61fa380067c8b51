package nodeproxy

import (
	"net/http"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// Entry states of two browsers (32 bytes, base64url).
const (
	aliceState = "ZTJlIGVudHJ5IHN0YXRlIG9mIG9uZSBicm93c2VyLiE"
	otherState = "c3RhdGUgb2YgYW5vdGhlciBicm93c2VyLCBib2IhISE"
)

const entryTTL = time.Minute

// entryEnv is a node proxy in subdomain routing whose verifiers and auth
// API stand-in use the harness keys.
type entryEnv struct {
	*harness
	entrySigner *jwt.Signer
}

func newEntryEnv(t *testing.T, modify func(*Options)) *entryEnv {
	t.Helper()
	var h *harness
	h = newHarness(t, harnessOpts{modify: func(o *Options) {
		o.RoutingMode, o.UserDomain, o.PublicOrigin = userorigin.Subdomain, securityUserDomain, "http://"+testHost
		o.OriginVerifier = audienceVerifier{&h, jwt.OriginAudience(testAudience)}
		o.EntryVerifier = audienceVerifier{&h, jwt.EntryAudience(testAudience)}
		if modify != nil {
			modify(o)
		}
	}})
	s, err := h.signer.WithAudience(jwt.EntryAudience(testAudience), entryTTL)
	if err != nil {
		t.Fatal(err)
	}
	return &entryEnv{harness: h, entrySigner: s}
}

// audienceVerifier verifies with the harness keys, looked up when used.
type audienceVerifier struct {
	h   **harness
	aud string
}

func (v audienceVerifier) Verify(tok string) (jwt.Claims, error) {
	return (*v.h).verifierFor(v.aud).Verify(tok)
}

func (v audienceVerifier) VerifyIgnoringExpiry(tok string) (jwt.Claims, error) {
	return (*v.h).verifierFor(v.aud).VerifyIgnoringExpiry(tok)
}

func userOrigin(user string) string { return "http://" + user + "." + securityUserDomain }

// code mints an entry code as the auth API does: for user's origin, bound
// to the browser holding state.
func (e *entryEnv) code(s *jwt.Signer, user, origin, state string) string {
	e.t.Helper()
	tok, err := s.Sign(jwt.Claims{User: user, SessionID: "sid", Epoch: 1, Origin: origin, ID: "rnd." + account.EntryStateBinding(state)})
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// enter brings code to user's origin from a browser holding state (none
// when ""), forwarded by a trusted proxy for client when client is set.
func (e *entryEnv) enter(user, code, state, client string) *http.Response {
	e.t.Helper()
	hdr := map[string]string{"Host": user + "." + securityUserDomain, "Accept": "text/html"}
	if state != "" {
		hdr["Cookie"] = entryStateName + "=" + state
	}
	if client != "" {
		hdr["X-Forwarded-For"] = client
	}
	resp := e.get("node-a", userorigin.EnterPath+"?"+url.Values{"code": {code}, "next": {"/chat"}}.Encode(), hdr)
	readAll(e.t, resp)
	return resp
}

// TestEnterChecksCodesOffline: a code the auth API would refuse for its
// signature, expiry, user, origin or browser is refused by the node proxy
// without a call; a good one is redeemed for an origin session.
func TestEnterChecksCodesOffline(t *testing.T) {
	e := newEntryEnv(t, nil)
	otherRing := jwt.NewKeyRing(time.Now())
	forger, err := jwt.NewSigner(jwt.SignerOptions{KeyRing: otherRing, Issuer: testIssuer, Audience: jwt.EntryAudience(testAudience), Lifetime: entryTTL})
	if err != nil {
		t.Fatal(err)
	}
	sessionAud, err := e.signer.WithAudience(testAudience, entryTTL)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		code  func() string
		state string
	}{
		{"forged signature", func() string { return e.code(forger, "alice", userOrigin("alice"), aliceState) }, aliceState},
		{"a session token as a code", func() string { return e.code(sessionAud, "alice", userOrigin("alice"), aliceState) }, aliceState},
		{"expired", func() string {
			c := e.code(e.entrySigner, "alice", userOrigin("alice"), aliceState)
			e.clock.Advance(entryTTL + 5*time.Second)
			return c
		}, aliceState},
		{"another user's code", func() string { return e.code(e.entrySigner, "bob", userOrigin("alice"), aliceState) }, aliceState},
		{"another origin", func() string { return e.code(e.entrySigner, "alice", userOrigin("bob"), aliceState) }, aliceState},
		{"another browser's state", func() string { return e.code(e.entrySigner, "alice", userOrigin("alice"), aliceState) }, otherState},
		{"no entry state", func() string { return e.code(e.entrySigner, "alice", userOrigin("alice"), aliceState) }, ""},
		{"not a JWT", func() string { return "not.a.jwt" }, aliceState},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := e.auth.redeems.Load()
			resp := e.enter("alice", tt.code(), tt.state, "")
			if resp.StatusCode != http.StatusUnauthorized || findCookie(resp, DefaultOriginCookieName) != nil {
				t.Errorf("%d with cookies %q, want 401 and no session", resp.StatusCode, resp.Header.Values("Set-Cookie"))
			}
			if n := e.auth.redeems.Load() - before; n != 0 {
				t.Errorf("%d redemption calls reached the auth API", n)
			}
		})
	}
	resp := e.enter("alice", e.code(e.entrySigner, "alice", userOrigin("alice"), aliceState), aliceState, "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/chat" || findCookie(resp, DefaultOriginCookieName) == nil {
		t.Errorf("good code: %d to %q, cookies %q", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Values("Set-Cookie"))
	}
	if n := e.auth.redeems.Load(); n != 1 {
		t.Errorf("%d redemption calls, want 1", n)
	}
}

// TestEnterThrottlesRefusalsPerClient: a client with many refused entries
// is answered 429 without a check or a call, even for a good code, while
// another client is served; the block drains with time.
func TestEnterThrottlesRefusalsPerClient(t *testing.T) {
	e := newEntryEnv(t, func(o *Options) { o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	const guesser, other = "203.0.113.1", "203.0.113.2"
	for i := range refusalBurst {
		if resp := e.enter("alice", "not.a.jwt", aliceState, guesser); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("refusal %d: %d, want 401", i, resp.StatusCode)
		}
	}
	good := func() string { return e.code(e.entrySigner, "alice", userOrigin("alice"), aliceState) }
	resp := e.enter("alice", good(), aliceState, guesser)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("after %d refusals: %d (Retry-After %q), want 429 with Retry-After", refusalBurst, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n := e.auth.redeems.Load(); n != 0 {
		t.Errorf("%d redemption calls from a blocked client", n)
	}
	if resp := e.enter("alice", good(), aliceState, other); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("another client: %d, want 303", resp.StatusCode)
	}
	e.clock.Advance(refusalEvery)
	if resp := e.enter("alice", good(), aliceState, guesser); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after %v: %d, want 303", refusalEvery, resp.StatusCode)
	}
}
