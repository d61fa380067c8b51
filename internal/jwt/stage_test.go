package jwt

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestStagedKeyIsPublishedBeforeItSigns(t *testing.T) {
	fx := newFixture(t, -1)
	oldKID := fx.ring.SigningKID(fx.clock.Now())
	newKID := fx.ring.Stage(fx.clock.Now(), fx.clock.Now().Add(10*time.Minute))

	jwks, err := fx.ring.JWKSAt(fx.clock.Now(), testLifetime)
	if err != nil {
		t.Fatal(err)
	}
	set, err := ParseJWKS(jwks)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.PublicKey(newKID); err != nil {
		t.Errorf("staged key not in the JWKS: %v", err)
	}
	tok := signed(t, fx)
	if d, _ := Decode(tok); d.KID != oldKID {
		t.Errorf("token signed by %q before the staged key is active, want %q", d.KID, oldKID)
	}

	fx.clock.Advance(10 * time.Minute)
	if got := fx.ring.SigningKID(fx.clock.Now()); got != newKID {
		t.Errorf("signing kid at activation = %q, want the staged %q", got, newKID)
	}
	tok = signed(t, fx)
	if d, _ := Decode(tok); d.KID != newKID {
		t.Errorf("token signed by %q after activation, want %q", d.KID, newKID)
	}
	if _, err := fx.verifier.Verify(tok); err != nil {
		t.Errorf("token of the activated key: %v", err)
	}
	if n := fx.ring.Prune(fx.clock.Now(), testLifetime); n != 0 {
		t.Errorf("Prune at activation dropped %d keys", n)
	}
}

func TestStageKeepsActivationOrder(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	ring := NewKeyRing(clock.Now())
	a := ring.Stage(clock.Now(), clock.Now().Add(time.Hour))
	b := ring.Stage(clock.Now(), clock.Now()) // asks for an earlier activation
	keys := ring.Keys()
	if len(keys) != 3 || keys[1].KID != a || keys[2].KID != b || keys[2].Active.Before(keys[1].Active) {
		t.Fatalf("keys out of order: %+v", keys)
	}
	if got := ring.SigningKID(clock.Now()); got != keys[0].KID {
		t.Errorf("signing kid %q before any staged key is active, want the first", got)
	}
}

func TestJWKSAtDropsLongRetiredKeysRingKeepsThem(t *testing.T) {
	fx := newFixture(t, -1)
	first := fx.ring.SigningKID(fx.clock.Now())
	fx.clock.Advance(time.Hour)
	fx.ring.Rotate(fx.clock.Now())
	fx.clock.Advance(testLifetime + time.Minute)

	jwks, err := fx.ring.JWKSAt(fx.clock.Now(), testLifetime)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(jwks), first) {
		t.Error("JWKS still publishes a key retired longer than the token lifetime")
	}
	if _, err := fx.ring.PublicKey(first); err != nil {
		t.Errorf("ring lost the retired key before Prune: %v", err)
	}
	if _, err := fx.ring.PublicKey("nope"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("ring.PublicKey(unknown) = %v, want ErrUnknownKey", err)
	}
}

func TestUnmarshalKeyRingWithoutActiveDefaultsToCreated(t *testing.T) {
	const ts = "2026-03-01T12:00:00Z"
	ring, err := UnmarshalKeyRing([]byte(`{"keys":[` + storedKey("k1", ts, goodSeed) + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	if k := ring.Keys()[0]; !k.Active.Equal(k.Created) {
		t.Errorf("active %v, want created %v", k.Active, k.Created)
	}
	// Staged keys survive a round trip with their activation time.
	ring.Stage(testkit.Epoch, testkit.Epoch.Add(time.Hour))
	data, err := ring.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := UnmarshalKeyRing(data)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := loaded.Keys(), ring.Keys(); len(got) != 2 || !got[1].Active.Equal(want[1].Active) {
		t.Errorf("loaded keys %+v, want %+v", got, want)
	}
}

func TestVerifyIgnoringExpiry(t *testing.T) {
	fx := newFixture(t, 0)
	tok := fx.sign(t, Claims{User: "alice", Epoch: 7, SessionID: "sid-1"})
	fx.clock.Advance(3 * time.Hour)
	if _, err := fx.verifier.Verify(tok); !errors.Is(err, ErrExpired) {
		t.Fatalf("Verify of an old token = %v, want ErrExpired", err)
	}
	c, err := fx.verifier.VerifyIgnoringExpiry(tok)
	if err != nil {
		t.Fatalf("VerifyIgnoringExpiry: %v", err)
	}
	if c.User != "alice" || c.SessionID != "sid-1" || c.Epoch != 7 {
		t.Errorf("claims %+v", c)
	}
	// Every other fault still rejects, with the same sentinel as Verify.
	for _, tc := range verifyCases() {
		if tc.want == nil || tc.want == ErrExpired {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, 0)
			tok := tc.token(t, fx)
			fx.clock.Advance(tc.advance)
			if _, err := fx.verifier.VerifyIgnoringExpiry(tok); !errors.Is(err, tc.want) {
				t.Errorf("VerifyIgnoringExpiry = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	fx := newFixture(t, -1)
	tok := signed(t, fx)
	d, err := Decode(tok)
	if err != nil {
		t.Fatal(err)
	}
	if d.Alg != "EdDSA" || d.KID != fx.ring.SigningKID(fx.clock.Now()) {
		t.Errorf("alg %q kid %q", d.Alg, d.KID)
	}
	var p map[string]any
	if err := json.Unmarshal(d.Payload, &p); err != nil || p["sub"] != "alice" {
		t.Errorf("payload %s: %v", d.Payload, err)
	}
	for _, bad := range []string{"", "a.b", "a.b.c.d", "e30.!!.x", seg([]int{1}) + ".e30.", "e30." + b64([]byte("null")) + "."} {
		if _, err := Decode(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

// FuzzDecode checks that Decode never panics and only accepts three
// segments whose first two are JSON objects.
func FuzzDecode(f *testing.F) {
	fx := newFixture(f, -1)
	for _, tc := range verifyCases() {
		f.Add(tc.token(f, fx))
	}
	f.Fuzz(func(t *testing.T, tok string) {
		d, err := Decode(tok)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if strings.Count(tok, ".") != 2 || !json.Valid(d.Header) || !json.Valid(d.Payload) {
			t.Fatalf("accepted %q", tok)
		}
	})
}

func TestIssueReturnsTheSignedClaims(t *testing.T) {
	fx := newFixture(t, -1)
	tok, c, err := fx.signer.Issue(Claims{User: "alice", Epoch: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := fx.verifier.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if got != c {
		t.Errorf("Issue returned %+v, token says %+v", c, got)
	}
}
