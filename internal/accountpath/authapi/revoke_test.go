package authapi

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// login returns a fresh session cookie for user.
func (in *instance) login(t *testing.T, token string) *http.Cookie {
	t.Helper()
	resp, body := in.do(t, req{method: "POST", path: "/login", header: map[string]string{"Authorization": "Bearer " + token}})
	ck := cookie(resp, DefaultCookieName)
	if resp.StatusCode != http.StatusOK || ck == nil {
		t.Fatalf("login: %d %s", resp.StatusCode, body)
	}
	return ck
}

// aliceTwice starts a replica on a warm pool, signs alice up and logs her
// in a second time: her token and both sessions' cookies.
func (e *env) aliceTwice(t *testing.T) (in *instance, token string, first, second *http.Cookie) {
	t.Helper()
	e.warm(t)
	in = e.start(t, nil)
	token, first = in.signupJSON(t, "alice")
	return in, token, first, in.login(t, token)
}

// refusal is a request a replica must turn away with code.
type refusal struct {
	name string
	rq   req
	code int
}

// refuses sends each request to in and checks that it is answered its code.
func (in *instance) refuses(t *testing.T, refusals []refusal) {
	t.Helper()
	for _, r := range refusals {
		if resp, body := in.do(t, r.rq); resp.StatusCode != r.code {
			t.Errorf("%s: %d %s, want %d", r.name, resp.StatusCode, body, r.code)
		}
	}
}

// refuses waits until the node proxy view has seen the claim of ck's user
// as the API server holds it now, then checks that the view refuses ck.
func (p *proxyView) refuses(t *testing.T, name string, ck *http.Cookie) {
	t.Helper()
	c, err := p.verifier.Verify(ck.Value)
	if err != nil {
		return
	}
	key := account.ClaimName(DefaultClaimPrefix, c.User)
	claim, err := p.claims.Get(t.Context(), key, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		testkit.Eventually(t, "node proxy view saw claim "+key+" deleted", func() bool {
			_, ok, _ := p.store.GetByKey(p.ns + "/" + key)
			return !ok
		})
	case err != nil:
		t.Fatal(err)
	default:
		want, _ := strconv.ParseUint(claim.ResourceVersion, 10, 64)
		testkit.Eventually(t, "node proxy view saw claim "+key+" at version "+claim.ResourceVersion, func() bool {
			obj, ok, _ := p.store.GetByKey(p.ns + "/" + key)
			if !ok {
				return false
			}
			got, _ := strconv.ParseUint(obj.(*extensions.SandboxClaim).ResourceVersion, 10, 64)
			return got >= want
		})
	}
	if err := p.accepts(ck.Value); err == nil {
		t.Errorf("%s still accepted once the node proxy saw the revocation", name)
	}
}

func TestLogoutEndsThatSessionOnly(t *testing.T) {
	e := newEnv(t)
	in, _, first, second := e.aliceTwice(t)
	pv := e.proxyView(t, in)
	for _, ck := range []*http.Cookie{first, second} {
		if err := pv.accepts(ck.Value); err != nil {
			t.Fatalf("session refused before logout: %v", err)
		}
	}

	// Cookie-authenticated logout needs a same-origin Origin or Referer.
	for name, h := range map[string]map[string]string{
		"no origin":    nil,
		"cross origin": {"Origin": "https://evil.example"},
		"null origin":  {"Origin": "null"},
		"bad referer":  {"Referer": "https://evil.example/page"},
	} {
		resp, body := in.do(t, req{method: "POST", path: "/logout", cookies: []*http.Cookie{first}, header: h})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: logout %d %s, want 403", name, resp.StatusCode, body)
		}
	}
	if err := pv.accepts(first.Value); err != nil {
		t.Fatalf("a refused logout ended the session: %v", err)
	}

	resp, body := in.do(t, req{method: "POST", path: "/logout", cookies: []*http.Cookie{first},
		header: map[string]string{"Referer": in.http.URL + "/"}})
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("logout: %d %s", resp.StatusCode, body)
	}
	if ck := cookie(resp, DefaultCookieName); ck == nil || ck.MaxAge >= 0 {
		t.Errorf("logout does not clear the cookie: %+v", ck)
	}
	pv.refuses(t, "logged-out session", first)
	if err := pv.accepts(second.Value); err != nil {
		t.Errorf("logout ended the other session too: %v", err)
	}
	c, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := account.FromClaim(c)
	if err != nil || len(a.Revoked) != 1 {
		t.Errorf("revoked list %+v, %v", a.Revoked, err)
	}
	// The landing page no longer knows the logged-out cookie.
	_, page := in.do(t, req{method: "GET", path: "/", cookies: []*http.Cookie{first}})
	if between(page, "Signed in as <strong>", "</strong>") != "" {
		t.Error("landing page still signed in with a logged-out cookie")
	}
	// Logging out without a session, or a second time, is harmless.
	for _, cks := range [][]*http.Cookie{nil, {first}} {
		resp, _ := in.do(t, req{method: "POST", path: "/logout", cookies: cks, header: in.origin()})
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("idle logout: %d", resp.StatusCode)
		}
	}
	// A browser is sent home.
	resp, _ = in.do(t, req{method: "POST", path: "/logout", cookies: []*http.Cookie{second},
		header: map[string]string{"Origin": in.http.URL, "Accept": "text/html"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Errorf("browser logout: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := resp.Header.Get("Clear-Site-Data"); got != `"cache", "cookies", "storage"` {
		t.Errorf("logout Clear-Site-Data %q: the browser keeps what agents left on the origin", got)
	}
}

func TestRecreateEndsEverySessionAndReplacesTheToken(t *testing.T) {
	e := newEnv(t)
	in, token, first, second := e.aliceTwice(t)
	pv := e.proxyView(t, in)
	old, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	for name, h := range map[string]map[string]string{"no origin": nil, "cross origin": {"Origin": "https://evil.example"}} {
		if resp, _ := in.do(t, req{method: "POST", path: "/recreate", cookies: []*http.Cookie{first}, header: h}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s recreate: %d, want 403", name, resp.StatusCode)
		}
	}
	if resp, _ := in.do(t, req{method: "POST", path: "/recreate"}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous recreate: %d, want 401", resp.StatusCode)
	}
	if cur, _ := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{}); cur == nil || cur.UID != old.UID {
		t.Fatal("a refused recreate replaced the claim")
	}

	resp, body := in.do(t, req{method: "POST", path: "/recreate", cookies: []*http.Cookie{first}, header: withHeaders(in.origin(), navigation)})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("recreate: %d %s", resp.StatusCode, body)
	}
	fresh := cookie(resp, DefaultCookieName)
	var out accountResponse
	mustJSON(t, body, &out)
	if fresh == nil || out.Token == "" || out.Token == token {
		t.Fatalf("recreate gave the caller no new session or no new token: %s", body)
	}
	pv.refuses(t, "first session", first)
	pv.refuses(t, "second session", second)
	testkit.EventuallyNil(t, "the caller's new session accepted", func() error { return pv.accepts(fresh.Value) })
	cur, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldEpoch, _ := strconv.ParseInt(old.Annotations[account.AnnotationSessionEpoch], 10, 64)
	newEpoch, _ := strconv.ParseInt(cur.Annotations[account.AnnotationSessionEpoch], 10, 64)
	if cur.UID == old.UID || newEpoch != oldEpoch+1 || cur.Annotations[account.AnnotationTokenHash] == old.Annotations[account.AnnotationTokenHash] {
		t.Errorf("recreated claim: uid %s (old %s), epoch %d (old %d), same token hash %v", cur.UID, old.UID, newEpoch, oldEpoch,
			cur.Annotations[account.AnnotationTokenHash] == old.Annotations[account.AnnotationTokenHash])
	}
	if resp, _ := in.do(t, req{method: "POST", path: "/login", header: map[string]string{"Authorization": "Bearer " + token}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("login with the token from before the recreate: %d, want 401", resp.StatusCode)
	}
	in.login(t, out.Token)

	// An API client recreates with its bearer token, no Origin needed.
	resp, body = in.do(t, req{method: "POST", path: "/recreate", header: map[string]string{"Authorization": "Bearer " + out.Token}})
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("bearer recreate: %d %s", resp.StatusCode, body)
	}
}

func TestDeleteEndsEverySessionForGood(t *testing.T) {
	e, in := warmStart(t)
	token, ck := in.signupJSON(t, "alice")
	_, bobCookie := in.signupJSON(t, "bob")
	pv := e.proxyView(t, in)

	in.refuses(t, []refusal{
		{"anonymous", req{method: "DELETE", path: "/users/alice"}, 401},
		{"no origin", req{method: "DELETE", path: "/users/alice", cookies: []*http.Cookie{ck}}, 403},
		{"cross origin", req{method: "DELETE", path: "/users/alice", cookies: []*http.Cookie{ck}, header: map[string]string{"Origin": "https://evil.example"}}, 403},
		{"another user", req{method: "DELETE", path: "/users/alice", cookies: []*http.Cookie{bobCookie}, header: in.origin()}, 403},
		{"wrong token", req{method: "DELETE", path: "/users/alice", header: map[string]string{"Authorization": "Bearer " + newBearerToken()}}, 401},
		{"form unconfirmed", req{method: "POST", path: "/users/alice/delete", form: url.Values{"confirm": {"alic"}}, cookies: []*http.Cookie{ck}, header: in.origin()}, 400},
	})
	if _, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{}); err != nil {
		t.Fatalf("a refused delete removed the claim: %v", err)
	}

	resp, body := in.do(t, req{method: "POST", path: "/users/alice/delete", form: url.Values{"confirm": {"alice"}}, cookies: []*http.Cookie{ck}, header: in.origin()})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("form delete: %d %s", resp.StatusCode, body)
	}
	pv.refuses(t, "deleted account's session", ck)
	if _, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("claim after delete: %v", err)
	}
	if resp, _ := in.do(t, req{method: "POST", path: "/login", header: map[string]string{"Authorization": "Bearer " + token}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("login after delete: %d", resp.StatusCode)
	}

	// Someone signs up under the freed name: the old cookie stays dead.
	in.signupJSON(t, "alice")
	pv.refuses(t, "a session of the deleted account, for the new account of the same name", ck)

	// An API client deletes with its bearer token.
	bobToken, _ := in.signupJSON(t, "carol")
	if resp, body := in.do(t, req{method: "DELETE", path: "/users/carol", header: map[string]string{"Authorization": "Bearer " + bobToken}}); resp.StatusCode != http.StatusNoContent {
		t.Errorf("bearer delete: %d %s", resp.StatusCode, body)
	}
}
