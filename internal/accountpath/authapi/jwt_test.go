package authapi

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/jwt"
)

func seg(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// craft signs header.payload with sign (nil: empty signature).
func craft(header, payload any, sign func([]byte) []byte) string {
	in := seg(header) + "." + seg(payload)
	var sig []byte
	if sign != nil {
		sig = sign([]byte(in))
	}
	return in + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// decodePayload returns the payload of tok as a map.
func decodePayload(t *testing.T, tok string) map[string]any {
	t.Helper()
	d, err := jwt.Decode(tok)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(d.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// ringOf reads the signing ring from the Secret, as only the auth API can.
func (e *env) ringOf(t *testing.T) *jwt.KeyRing {
	t.Helper()
	sec, err := e.kube.CoreV1().Secrets(e.ns).Get(t.Context(), DefaultSigningSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ring, err := jwt.UnmarshalKeyRing(sec.Data[secretKeysField])
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

func TestRejectedTokenVariants(t *testing.T) {
	e, in, clock := clockedStart(t, nil)
	_, ck := in.signupJSON(t, "alice")
	pv := e.proxyView(t, in)
	if err := pv.accepts(ck.Value); err != nil {
		t.Fatalf("good cookie refused: %v", err)
	}
	good := ck.Value
	d, _ := jwt.Decode(good)
	payload := decodePayload(t, good)
	ring := e.ringOf(t)
	header := map[string]any{"alg": "EdDSA", "typ": "JWT", "kid": d.KID}
	signWith := func(iss, aud string) string {
		s, err := jwt.NewSigner(jwt.SignerOptions{KeyRing: ring, Issuer: iss, Audience: aud, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := s.Sign(jwt.Claims{User: "alice", SessionID: payload["sid"].(string), Epoch: int64(payload["epoch"].(float64))})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	_, foreign, _ := ed25519.GenerateKey(rand.Reader)
	pub, err := ring.PublicKey(d.KID)
	if err != nil {
		t.Fatal(err)
	}
	changed := map[string]any{}
	for k, v := range payload {
		changed[k] = v
	}
	changed["sub"] = "bob"

	variants := []struct {
		name string
		tok  string
		want error // what the JWKS-only verifier says
	}{
		{"alg none", craft(map[string]any{"alg": "none", "typ": "JWT", "kid": d.KID}, payload, nil), jwt.ErrBadSignature},
		{"HMAC with the public key", craft(map[string]any{"alg": "HS256", "typ": "JWT", "kid": d.KID}, payload, func(b []byte) []byte {
			m := hmac.New(sha256.New, pub)
			m.Write(b)
			return m.Sum(nil)
		}), jwt.ErrBadSignature},
		{"foreign key, our kid", craft(header, payload, func(b []byte) []byte { return ed25519.Sign(foreign, b) }), jwt.ErrBadSignature},
		{"changed payload", strings.Join([]string{strings.Split(good, ".")[0], seg(changed), strings.Split(good, ".")[2]}, "."), jwt.ErrBadSignature},
		{"wrong audience", signWith(DefaultIssuer, "someone-else"), jwt.ErrClaims},
		{"wrong issuer", signWith("https://evil.example", DefaultAudience), jwt.ErrClaims},
		{"unknown kid", craft(map[string]any{"alg": "EdDSA", "typ": "JWT", "kid": "nokey"}, payload, func(b []byte) []byte { return ed25519.Sign(foreign, b) }), jwt.ErrUnknownKey},
	}
	proxy := map[string]string{"Authorization": "Bearer " + saToken(t, e.ns, "nodeproxy", DefaultInternalAudience)}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			if err := pv.accepts(v.tok); !errors.Is(err, v.want) {
				t.Errorf("node proxy view: %v, want %v", err, v.want)
			}
			if resp, body := in.do(t, req{method: "POST", path: renewPath, json: `{"token":"` + v.tok + `"}`, header: proxy}); resp.StatusCode != http.StatusBadRequest {
				t.Errorf("renew: %d %s, want 400", resp.StatusCode, body)
			}
			resp, page := in.do(t, req{method: "GET", path: "/", cookies: []*http.Cookie{{Name: DefaultCookieName, Value: v.tok}}})
			if strings.Contains(page, "Signed in as") {
				t.Error("landing page accepts the token")
			}
			if c := cookie(resp, DefaultCookieName); c == nil || c.MaxAge >= 0 {
				t.Error("landing page keeps a bad session cookie")
			}
			if resp, _ := in.do(t, req{method: "POST", path: "/recreate", cookies: []*http.Cookie{{Name: DefaultCookieName, Value: v.tok}}, header: in.origin()}); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("recreate with the token: %d, want 401", resp.StatusCode)
			}
		})
	}

	// Expired: node proxies refuse it; the auth API renews it while the
	// session lasts, and refuses it after.
	clock.Advance(DefaultSessionTTL + time.Minute)
	pv.verifier, _ = jwt.NewVerifier(jwt.VerifierOptions{Keys: jwt.KeySet{d.KID: pub}, Issuer: DefaultIssuer, Audience: DefaultAudience, Leeway: 5 * time.Second, Now: clock.Now})
	if err := pv.accepts(good); !errors.Is(err, jwt.ErrExpired) {
		t.Errorf("expired token at the node proxy: %v, want ErrExpired", err)
	}
	if resp, _ := in.do(t, req{method: "POST", path: renewPath, json: `{"token":"` + good + `"}`, header: proxy}); resp.StatusCode != http.StatusOK {
		t.Errorf("renew an expired token within the session: %d", resp.StatusCode)
	}
	clock.Advance(DefaultCookieMaxAge)
	if resp, _ := in.do(t, req{method: "POST", path: renewPath, json: `{"token":"` + good + `"}`, header: proxy}); resp.StatusCode != http.StatusGone {
		t.Errorf("renew an expired token past the session: %d, want 410", resp.StatusCode)
	}
	_, page := in.do(t, req{method: "GET", path: "/", cookies: []*http.Cookie{ck}})
	if strings.Contains(page, "Signed in as") {
		t.Error("landing page accepts a token past the session's maximum age")
	}
}
