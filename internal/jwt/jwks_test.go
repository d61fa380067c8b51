package jwt

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestJWKSRoundTrip(t *testing.T) {
	fx := newFixture(t, -1)
	fx.ring.Rotate(fx.clock.Now().Add(time.Hour))
	data, err := fx.ring.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kty":"OKP"`, `"crv":"Ed25519"`, `"alg":"EdDSA"`, `"use":"sig"`} {
		if c := strings.Count(string(data), want); c != 2 {
			t.Errorf("JWKS has %d × %s, want 2", c, want)
		}
	}
	if bytes.Contains(data, []byte(`"d"`)) {
		t.Error("JWKS contains private key material")
	}
	set, err := ParseJWKS(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range fx.ring.snapshot() {
		got, err := set.PublicKey(k.id)
		if err != nil || !got.Equal(k.priv.Public()) {
			t.Errorf("kid %q: key %x, %v", k.id, got, err)
		}
	}
	if _, err := set.PublicKey("nope"); err == nil {
		t.Error("KeySet found an unknown kid")
	}
}

const goodX = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"

func edJWK(fields string) string {
	return `{"kty":"OKP","crv":"Ed25519",` + fields + `}`
}

func keysDoc(keys ...string) string { return `{"keys":[` + strings.Join(keys, ",") + `]}` }

type jwksCase struct {
	name, in string
	want     string // error substring; empty: accepted
	kids     int    // keys expected when accepted
}

func jwksCases() []jwksCase {
	good := edJWK(`"kid":"k1","x":"` + goodX + `","alg":"EdDSA","use":"sig"`)
	many := make([]string, maxJWKSKeys+1)
	for i := range many {
		many[i] = edJWK(fmt.Sprintf(`"kid":"k%d","x":"%s"`, i, goodX))
	}
	return []jwksCase{
		{name: "good", in: keysDoc(good), kids: 1},
		{name: "minimal members", in: keysDoc(edJWK(`"kid":"k1","x":"` + goodX + `"`)), kids: 1},
		{name: "alg Ed25519", in: keysDoc(edJWK(`"kid":"k1","x":"` + goodX + `","alg":"Ed25519"`)), kids: 1},
		{name: "other kty skipped", in: keysDoc(`{"kty":"RSA","kid":"r1","n":"AQAB","e":"AQAB"}`, good), kids: 1},
		{name: "X25519 skipped", in: keysDoc(`{"kty":"OKP","crv":"X25519","kid":"k1","x":"`+goodX+`"}`, good), kids: 1},
		{name: "enc key skipped", in: keysDoc(edJWK(`"kid":"k2","x":"`+goodX+`","use":"enc"`), good), kids: 1},
		{name: "extra members ignored", in: `{"keys":[` + good + `],"x-extra":true}`, kids: 1},

		{name: "not json", in: `keys`, want: "parse jwks"},
		{name: "empty", in: ``, want: "parse jwks"},
		{name: "no keys member", in: `{}`, want: "no keys member"},
		{name: "keys null", in: `{"keys":null}`, want: "no keys member"},
		{name: "keys not array", in: `{"keys":{}}`, want: "parse jwks"},
		{name: "key not object", in: `{"keys":[1]}`, want: "key 0"},
		{name: "no usable key", in: keysDoc(`{"kty":"RSA","kid":"r1"}`), want: "no Ed25519"},
		{name: "empty set", in: keysDoc(), want: "no Ed25519"},
		{name: "too many keys", in: keysDoc(many...), want: "at most"},
		{name: "short x", in: keysDoc(edJWK(`"kid":"k1","x":"` + goodX[:40] + `"`)), want: "want 32"},
		{name: "long x", in: keysDoc(edJWK(`"kid":"k1","x":"` + goodX + `AAAA"`)), want: "x is"},
		{name: "missing x", in: keysDoc(edJWK(`"kid":"k1"`)), want: "want 32"},
		{name: "x bad base64", in: keysDoc(edJWK(`"kid":"k1","x":"` + goodX[:42] + `!"`)), want: "base64url"},
		{name: "x padded", in: keysDoc(edJWK(`"kid":"k1","x":"` + goodX + `="`)), want: "base64url"},
		{name: "x std alphabet", in: keysDoc(edJWK(`"kid":"k1","x":"` + strings.ReplaceAll(goodX, "_", "/") + `"`)), want: "base64url"},
		{name: "x non-canonical", in: keysDoc(edJWK(`"kid":"k1","x":"` + goodX[:42] + `p"`)), want: "base64url"},
		{name: "missing kid", in: keysDoc(edJWK(`"x":"` + goodX + `"`)), want: "kid must be"},
		{name: "bad kid", in: keysDoc(edJWK(`"kid":"a/b","x":"` + goodX + `"`)), want: "kid must be"},
		{name: "duplicate kid", in: keysDoc(good, good), want: "duplicate kid"},
		{name: "wrong alg", in: keysDoc(edJWK(`"kid":"k1","x":"` + goodX + `","alg":"RS256"`)), want: "alg"},
		{name: "private key", in: keysDoc(edJWK(`"kid":"k1","x":"` + goodX + `","d":"` + goodX + `"`)), want: "private key"},
		{name: "kid wrong type", in: keysDoc(edJWK(`"kid":1,"x":"` + goodX + `"`)), want: "key 0"},
	}
}

func TestParseJWKS(t *testing.T) {
	for _, tc := range jwksCases() {
		t.Run(tc.name, func(t *testing.T) {
			set, err := ParseJWKS([]byte(tc.in))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ParseJWKS: %v", err)
				}
				if len(set) != tc.kids {
					t.Errorf("got %d keys, want %d", len(set), tc.kids)
				}
				for kid, k := range set {
					if len(k) != ed25519.PublicKeySize || !validKID(kid) {
						t.Errorf("kid %q: bad key", kid)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseJWKS = %v, want error containing %q", err, tc.want)
			}
			if set != nil {
				t.Error("error returned with a key set")
			}
		})
	}
}
