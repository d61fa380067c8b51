package jwt

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestRotationKeepsOldTokensUntilPruned(t *testing.T) {
	const rotation = 24 * time.Hour
	fx := newFixture(t, -1)
	oldKID := fx.ring.signingKey().id

	fx.clock.Advance(rotation)
	newKID := fx.ring.Rotate(fx.clock.Now())
	if newKID == oldKID || fx.ring.signingKey().id != newKID {
		t.Fatalf("Rotate returned %q; signing kid %q; old %q", newKID, fx.ring.signingKey().id, oldKID)
	}
	fresh := signed(t, fx)
	if !strings.Contains(fresh, seg(header(newKID))) {
		t.Error("token after Rotate is not signed by the new key")
	}

	// A token the old key signed just before the rotation is still current.
	fx.clock.Advance(-time.Minute)
	old := signed2(t, fx, oldKID)
	fx.clock.Advance(time.Minute)
	for name, tok := range map[string]string{"old": old, "new": fresh} {
		if _, err := fx.verifier.Verify(tok); err != nil {
			t.Errorf("%s token after Rotate: %v", name, err)
		}
	}
	if n := fx.ring.Prune(fx.clock.Now(), testLifetime+testLeeway); n != 0 {
		t.Errorf("Prune right after Rotate dropped %d keys", n)
	}
	if _, err := fx.verifier.Verify(old); err != nil {
		t.Errorf("old token after early Prune: %v", err)
	}

	fx.clock.Advance(testLifetime + testLeeway + time.Second)
	if n := fx.ring.Prune(fx.clock.Now(), testLifetime+testLeeway); n != 1 {
		t.Errorf("Prune past the old key's last token dropped %d keys, want 1", n)
	}
	if _, err := fx.verifier.Verify(old); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("old token after Prune: %v, want ErrUnknownKey", err)
	}
	if n := fx.ring.Prune(fx.clock.Now().Add(1000*time.Hour), 0); n != 0 || fx.ring.signingKey().id != newKID {
		t.Errorf("Prune dropped the signing key")
	}
}

// signed2 signs a good payload with the ring key kid, as a Signer did while
// kid was current.
func signed2(t *testing.T, fx *fixture, kid string) string {
	t.Helper()
	for _, k := range fx.ring.snapshot() {
		if k.id == kid {
			return craft(header(kid), goodPayload(fx.clock.Now()), edSigner(k.priv))
		}
	}
	t.Fatalf("kid %q not in ring", kid)
	return ""
}

func TestPruneMeasuresFromRetirement(t *testing.T) {
	// The auth API was down for days: the key is old, but it signed until
	// the rotation just now, so its tokens must keep verifying.
	clock := testkit.NewClock(testkit.Epoch)
	ring := NewKeyRing(clock.Now())
	clock.Advance(72 * time.Hour)
	ring.Rotate(clock.Now())
	if n := ring.Prune(clock.Now(), 25*time.Hour); n != 0 {
		t.Errorf("Prune dropped %d keys retired a moment ago", n)
	}
	clock.Advance(26 * time.Hour)
	ring.Rotate(clock.Now())
	if n := ring.Prune(clock.Now(), 25*time.Hour); n != 1 {
		t.Errorf("Prune dropped %d keys, want the first (retired 26h ago)", n)
	}
	if got := len(ring.snapshot()); got != 2 {
		t.Errorf("ring has %d keys, want 2", got)
	}
}

func TestKeyRingMarshalRoundTrip(t *testing.T) {
	fx := newFixture(t, -1)
	fx.clock.Advance(time.Hour)
	fx.ring.Rotate(fx.clock.Now())
	data, err := fx.ring.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := UnmarshalKeyRing(data)
	if err != nil {
		t.Fatal(err)
	}
	want, got := fx.ring.snapshot(), loaded.snapshot()
	if len(got) != len(want) {
		t.Fatalf("loaded %d keys, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].id != want[i].id || !got[i].created.Equal(want[i].created) || !got[i].priv.Equal(want[i].priv) {
			t.Errorf("key %d differs after round trip", i)
		}
	}
	// A replica that loaded the ring signs tokens the original's JWKS verifies.
	s, _ := NewSigner(SignerOptions{KeyRing: loaded, Issuer: testIssuer, Audience: testAudience, Now: fx.clock.Now})
	tok, _ := s.Sign(Claims{User: "alice"})
	if _, err := fx.verifier.Verify(tok); err != nil {
		t.Errorf("token from loaded ring: %v", err)
	}
}

const goodSeed = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"

func storedKey(kid, created, seed string) string {
	return `{"kid":"` + kid + `","created":"` + created + `","seed":"` + seed + `"}`
}

func TestUnmarshalKeyRingRejects(t *testing.T) {
	const ts = "2026-03-01T12:00:00Z"
	good := storedKey("k1", ts, goodSeed)
	cases := []struct{ name, in, want string }{
		{"empty", ``, "parse key ring"},
		{"null", `null`, "no keys"},
		{"no keys", `{"keys":[]}`, "no keys"},
		{"unknown field", `{"keys":[` + good + `],"extra":1}`, "unknown field"},
		{"unknown key field", `{"keys":[{"kid":"k1","created":"` + ts + `","seed":"` + goodSeed + `","x":""}]}`, "unknown field"},
		{"trailing data", `{"keys":[` + good + `]} {}`, "trailing data"},
		{"bad kid", `{"keys":[` + storedKey("k 1", ts, goodSeed) + `]}`, "key 0: kid"},
		{"duplicate kid", `{"keys":[` + good + `,` + good + `]}`, `key 1: duplicate kid "k1"`},
		{"missing created", `{"keys":[{"kid":"k1","seed":"` + goodSeed + `"}]}`, "missing created"},
		{"seed padded", `{"keys":[` + storedKey("k1", ts, goodSeed+"=") + `]}`, "base64url"},
		{"seed std base64", `{"keys":[` + storedKey("k1", ts, strings.Replace(goodSeed, "A", "+", 1)) + `]}`, "base64url"},
		{"seed short", `{"keys":[` + storedKey("k1", ts, goodSeed[:40]) + `]}`, "want 32"},
		{"every problem", `{"keys":[` + storedKey("", ts, goodSeed) + `,` + storedKey("k2", ts, "AAAA") + `]}`, "key 0: kid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := UnmarshalKeyRing([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("UnmarshalKeyRing = %v, want error containing %q", err, tc.want)
			}
			if tc.name == "every problem" && !strings.Contains(err.Error(), "key 1: seed") {
				t.Errorf("error %q does not report the second key", err)
			}
		})
	}
	if _, err := UnmarshalKeyRing([]byte(`{"keys":[` + good + `]}`)); err != nil {
		t.Errorf("good ring rejected: %v", err)
	}
}
