package authapi

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestClockSkewedReplicasCannotResurrectSessions: sessions are bound to
// the claim's UID and epochs count from account.FirstEpoch, so no
// replica's clock decides which sessions live. The first alice signs up on
// a replica an hour ahead (which used to give her claim an epoch an hour
// in the future) and logs in; she deletes the account, and someone else
// signs up as alice on a replica an hour behind. The first alice's session
// opens nothing of the new account, on a node proxy or on the auth API;
// the newcomer's sessions, from any replica, stay valid.
func TestClockSkewedReplicasCannotResurrectSessions(t *testing.T) {
	e, in := warmStart(t)
	skewed := func(d time.Duration) func(*Options) {
		return func(o *Options) { o.Now = func() time.Time { return time.Now().Add(d) } }
	}
	ahead := e.start(t, skewed(time.Hour))
	behind := e.start(t, skewed(-time.Hour))
	pv := e.proxyView(t, in)

	token, _ := ahead.signupJSON(t, "alice")
	old := in.login(t, token)
	if err := pv.accepts(old.Value); err != nil {
		t.Fatalf("the first alice's session is refused: %v", err)
	}
	if resp, body := in.do(t, req{method: "DELETE", path: "/users/alice", header: map[string]string{"Authorization": "Bearer " + token}}); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}

	newToken, _ := behind.signupJSON(t, "alice")
	c, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Annotations[account.AnnotationSessionEpoch]; got != strconv.Itoa(account.FirstEpoch) {
		t.Errorf("epoch of a claim made by a replica an hour behind: %s, want %d", got, account.FirstEpoch)
	}
	fresh := in.login(t, newToken)
	testkit.EventuallyNil(t, "the newcomer's session accepted", func() error { return pv.accepts(fresh.Value) })
	if err := pv.accepts(old.Value); err == nil {
		t.Error("a node proxy accepts the deleted account's session for the new account of the name")
	}
	for _, replica := range []*instance{in, ahead, behind} {
		resp, body := replica.do(t, req{method: "POST", path: "/users/alice/token", cookies: []*http.Cookie{old}, header: replica.origin()})
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the deleted account's session rotating the new account's token: %d %s, want 401", resp.StatusCode, body)
		}
	}
	if _, _, err := in.srv.usable(mustClaims(t, in, fresh)); err != nil {
		t.Errorf("the newcomer's session is refused by the auth API: %v", err)
	}

	// A recreate on the replica an hour ahead counts on by one, and the
	// newcomer's session from before it ends.
	resp, body := ahead.do(t, req{method: "POST", path: "/recreate", header: map[string]string{"Authorization": "Bearer " + newToken}})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("recreate: %d %s", resp.StatusCode, body)
	}
	if c, err = e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := c.Annotations[account.AnnotationSessionEpoch]; got != strconv.Itoa(account.FirstEpoch+1) {
		t.Errorf("epoch after a recreate on a replica an hour ahead: %s, want %d", got, account.FirstEpoch+1)
	}
	pv.refuses(t, "the session from before the recreate", fresh)
}

// mustClaims verifies the session cookie ck on replica in.
func mustClaims(t *testing.T, in *instance, ck *http.Cookie) jwt.Claims {
	t.Helper()
	c, err := in.srv.verifier.Verify(ck.Value)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
