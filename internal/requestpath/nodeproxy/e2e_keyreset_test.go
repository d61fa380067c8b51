package nodeproxy_test

import (
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestE2EKeyResetReachesEveryNodeProxy: after an operator resets the
// signing keys (a leak), every node proxy stops accepting the old keys'
// sessions within a report interval, although no token of the new key
// reaches it and its periodic JWKS refresh is minutes away: the auth API
// names the JWKS it serves in its answers to the node proxies' activity
// reports, and a node proxy holding another version fetches it again.
func TestE2EKeyResetReachesEveryNodeProxy(t *testing.T) {
	p := startPlatform(t)
	alice := p.signup(0, "alice")
	oldKID := tokenKID(t, alice.session)
	for i, n := range p.nodes {
		resp := p.get(i, "/u/alice/api/echo", map[string]string{"Cookie": cookie(alice.session)})
		if body := readAll(t, resp); resp.StatusCode != http.StatusOK {
			t.Fatalf("alice via %s before the reset: %d %s", n.name, resp.StatusCode, body)
		}
	}

	secrets := p.kube.CoreV1().Secrets(p.ns)
	reset := time.Now()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sec, err := secrets.Get(t.Context(), authapi.DefaultSigningSecret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		metav1.SetMetaDataAnnotation(&sec.ObjectMeta, authapi.ResetKeysAnnotation, "2026-12-03T13:00:00Z")
		_, err = secrets.Update(t.Context(), sec, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("annotate the signing Secret: %v", err)
	}
	testkit.Eventually(t, "the auth API's JWKS without the old key", func() bool { return !p.publishedKIDs(t)[oldKID] })

	for i, n := range p.nodes {
		testkit.Eventually(t, n.name+" refusing alice's session of the reset key", func() bool {
			resp := p.get(i, "/u/alice/api/echo", map[string]string{"Cookie": cookie(alice.session)})
			readAll(t, resp)
			return resp.StatusCode == http.StatusUnauthorized
		})
	}
	t.Logf("both node proxies refused the old session %v after the reset", time.Since(reset).Round(time.Millisecond))
}
