package jwt

import (
	"testing"
	"time"
)

func TestSignClaimsRoundTrip(t *testing.T) {
	fx := newFixture(t, -1)
	login := fx.clock.Now().Add(-time.Hour)
	in := Claims{User: "bob", SessionID: "c2Vzc2lvbg", AuthTime: login, Epoch: 42}
	got, err := fx.verifier.Verify(fx.sign(t, in))
	if err != nil {
		t.Fatal(err)
	}
	want := Claims{
		User: "bob", SessionID: "c2Vzc2lvbg", AuthTime: login, Epoch: 42,
		IssuedAt: fx.clock.Now(), Expiry: fx.clock.Now().Add(testLifetime),
	}
	if !got.IssuedAt.Equal(want.IssuedAt) || !got.Expiry.Equal(want.Expiry) || !got.AuthTime.Equal(want.AuthTime) ||
		got.User != want.User || got.SessionID != want.SessionID || got.Epoch != want.Epoch {
		t.Errorf("claims = %+v, want %+v", got, want)
	}
}

func TestSignFillsNewSession(t *testing.T) {
	fx := newFixture(t, -1)
	a, _ := fx.verifier.Verify(fx.sign(t, Claims{User: "carol"}))
	b, _ := fx.verifier.Verify(fx.sign(t, Claims{User: "carol"}))
	if len(a.SessionID) != 22 || a.SessionID == b.SessionID {
		t.Errorf("session ids %q, %q: want two distinct 22-character ids", a.SessionID, b.SessionID)
	}
	if !a.AuthTime.Equal(fx.clock.Now()) {
		t.Errorf("auth_time = %v, want now", a.AuthTime)
	}
	if _, err := fx.signer.Sign(Claims{}); err == nil {
		t.Error("Sign without user succeeded")
	}
}
