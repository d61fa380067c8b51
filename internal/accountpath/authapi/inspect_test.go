package authapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/jwt"
)

func TestInspectVerdicts(t *testing.T) {
	e, in := warmStart(t)
	token, ck := in.signupJSON(t, "alice")
	second := in.login(t, token)
	keys := e.ringOf(t) // the signing Secret's ring, as jwt inspect --key-file reads it
	o := InspectOptions{Keys: keys, Claims: e.claims}
	ctx := context.Background()

	rep := Inspect(ctx, ck.Value, o)
	if rep.Verdict != VerdictValid || rep.Revocation != "checked: not revoked" || !strings.Contains(string(rep.Claims), `"sub":"alice"`) || !strings.Contains(string(rep.Header), `"alg":"EdDSA"`) {
		t.Errorf("valid token: %+v", rep)
	}
	for name, raw := range map[string]string{
		"name=value":        DefaultCookieName + "=" + ck.Value,
		"cookie header":     "Cookie: theme=dark; " + DefaultCookieName + "=" + ck.Value + "; other=1",
		"secure cookie":     "__Host-" + DefaultCookieName + "=" + ck.Value,
		"set-cookie header": "Set-Cookie: " + ck.String(),
		"quoted, newline":   "\"" + ck.Value + "\"\n",
	} {
		if rep := Inspect(ctx, raw, o); rep.Verdict != VerdictValid {
			t.Errorf("%s: %+v", name, rep)
		}
	}

	later := func() time.Time { return time.Now().Add(time.Hour) }
	if rep := Inspect(ctx, ck.Value, InspectOptions{Keys: keys, Now: later}); rep.Verdict != VerdictExpired || !strings.Contains(rep.Detail, "renewable until") {
		t.Errorf("expired: %+v", rep)
	}
	if rep := Inspect(ctx, forgeSignature(t, ck.Value), o); rep.Verdict != VerdictBadSignature {
		t.Errorf("forged: %+v", rep)
	}
	if rep := Inspect(ctx, ck.Value, InspectOptions{Keys: jwt.KeySet{}}); rep.Verdict != VerdictUnknownKID {
		t.Errorf("unknown kid: %+v", rep)
	}
	if rep := Inspect(ctx, ck.Value, InspectOptions{Keys: keys, Audience: "other"}); rep.Verdict != VerdictInvalidClaims {
		t.Errorf("wrong audience: %+v", rep)
	}
	if rep := Inspect(ctx, "not a token", o); rep.Verdict != VerdictMalformed || rep.Valid() {
		t.Errorf("garbage: %+v", rep)
	}

	if resp, _ := in.do(t, req{method: "POST", path: "/logout", cookies: []*http.Cookie{ck}, header: in.origin()}); resp.StatusCode != 204 {
		t.Fatal("logout failed")
	}
	if rep := Inspect(ctx, ck.Value, o); rep.Verdict != VerdictRevoked || !strings.Contains(rep.Detail, "revoked list") {
		t.Errorf("logged out: %+v", rep)
	}
	if rep := Inspect(ctx, ck.Value, InspectOptions{Keys: keys}); rep.Verdict != VerdictValid || rep.Revocation != "not checked" {
		t.Errorf("without a claim getter revocation is unknown: %+v", rep)
	}
	if err := e.claims.Delete(ctx, "dsh-alice", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if rep := Inspect(ctx, second.Value, o); rep.Verdict != VerdictRevoked || !strings.Contains(rep.Detail, "does not exist") {
		t.Errorf("deleted account: %+v", rep)
	}
}
