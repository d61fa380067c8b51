package nodeproxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestInternalCallsUseInternalURL: with the auth API's /internal/ on a
// listener of its own, renewals go there and never to the public URL,
// which keeps serving everything outside /u/.
func TestInternalCallsUseInternalURL(t *testing.T) {
	var internalOnPublic atomic.Int32
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/internal/") {
			internalOnPublic.Add(1)
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("public: " + r.URL.Path))
	}))
	t.Cleanup(public.Close)
	h := newHarness(t, harnessOpts{modify: func(o *Options) {
		o.AuthAPIInternal = o.AuthAPI
		o.AuthAPI = public.URL
	}})
	h.addUser("alice", "node-a")
	tok := h.session("alice")

	h.clock.Advance(testLifetime + testLifetime/2)
	resp := h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(tok)})
	readAll(t, resp)
	if resp.StatusCode != 200 || sessionFromSetCookie(t, resp) == "" || h.auth.renewals.Load() != 1 {
		t.Errorf("expired session: status %d after %d renewals on the internal URL", resp.StatusCode, h.auth.renewals.Load())
	}
	resp = h.get("node-a", "/login", nil)
	if body := readAll(t, resp); body != "public: /login" {
		t.Errorf("/login reached %q, want the public URL", body)
	}
	if n := internalOnPublic.Load(); n != 0 {
		t.Errorf("%d internal calls went to the public URL", n)
	}
}
