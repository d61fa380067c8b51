package nodeproxy

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// fakeAuthAPI stands in for the auth API: the renewal endpoint (guarded by
// the node proxy's ServiceAccount token) and an echo for every other path.
type fakeAuthAPI struct {
	h        *harness
	addr     string
	renewals atomic.Int32
	refuse   atomic.Bool // answer renewals 401, as for an ended session

	wakes   atomic.Int32
	redeems atomic.Int32

	seen testkit.Recorder[seenAuthRequest]

	mu      sync.Mutex
	onWake  func(user string) // runs for every accepted wake call
	reports []activity.Report
}

// seenAuthRequest is what the auth API saw of one forwarded request.
type seenAuthRequest struct {
	Method, Path, Host string
	Header             http.Header
}

func startFakeAuthAPI(t testing.TB, h *harness) *fakeAuthAPI {
	t.Helper()
	a := &fakeAuthAPI{h: h}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.addr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /internal/v1/sessions/renew", a.renew)
	mux.HandleFunc("POST /internal/v1/wake", a.wake)
	mux.HandleFunc("POST /internal/v1/activity", a.activity)
	mux.HandleFunc("POST "+DefaultRedeemPath, a.redeem)
	mux.HandleFunc("/", a.echo)
	srv := &http.Server{Handler: mux}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return a
}

func (a *fakeAuthAPI) echo(w http.ResponseWriter, r *http.Request) {
	a.seen.Add(seenAuthRequest{Method: r.Method, Path: r.URL.Path, Host: r.Host, Header: r.Header.Clone()})
	if r.URL.Path == "/login" {
		http.SetCookie(w, &http.Cookie{Name: DefaultCookieName, Value: "minted", Path: "/", HttpOnly: true})
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte("auth api: " + r.URL.Path))
}

func (a *fakeAuthAPI) renew(w http.ResponseWriter, r *http.Request) {
	a.renewals.Add(1)
	if r.Header.Get("Authorization") != "Bearer "+testSAToken {
		http.Error(w, "caller not allowed", http.StatusUnauthorized)
		return
	}
	var req struct{ Token string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	c, err := a.h.ver.VerifyIgnoringExpiry(req.Token)
	if err != nil || a.refuse.Load() {
		http.Error(w, "session ended", http.StatusUnauthorized)
		return
	}
	tok, err := a.h.signer.Sign(jwt.Claims{User: c.User, SessionID: c.SessionID, AuthTime: c.AuthTime, Epoch: c.Epoch})
	if err != nil {
		http.Error(w, errors.Unwrap(err).Error(), http.StatusInternalServerError)
		return
	}
	ck := &http.Cookie{Name: DefaultCookieName, Value: tok, Path: "/", MaxAge: 3600, HttpOnly: true, SameSite: http.SameSiteLaxMode}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"token": tok, "user": c.User, "max_age": 3600, "set_cookie": ck.String()})
}

// redeem counts redemptions and, as the auth API does but for single use,
// turns an entry code brought with its entry state into an origin session.
func (a *fakeAuthAPI) redeem(w http.ResponseWriter, r *http.Request) {
	a.redeems.Add(1)
	if r.Header.Get("Authorization") != "Bearer "+testSAToken {
		http.Error(w, "caller not allowed", http.StatusUnauthorized)
		return
	}
	var req struct{ Code, Origin string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	code, state, _ := strings.Cut(req.Code, account.EntryStateSep)
	c, err := a.h.verifierFor(jwt.EntryAudience(testAudience)).Verify(code)
	if err != nil || c.Origin != req.Origin || !strings.HasSuffix(c.ID, "."+account.EntryStateBinding(state)) {
		http.Error(w, "entry code refused", http.StatusUnauthorized)
		return
	}
	signer, err := a.h.signer.WithAudience(jwt.OriginAudience(testAudience), 0)
	if err == nil {
		c.ID, c.Origin = "", req.Origin
		code, err = signer.Sign(c)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"token": code, "user": c.User, "max_age": 3600})
}

// wake counts wake calls and runs onWake, as the auth API patches the
// Sandbox Running.
func (a *fakeAuthAPI) wake(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+testSAToken {
		http.Error(w, "caller not allowed", http.StatusUnauthorized)
		return
	}
	var req struct{ User string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.User == "" {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	a.wakes.Add(1)
	a.mu.Lock()
	f := a.onWake
	a.mu.Unlock()
	if f != nil {
		f(req.User)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"user": req.User, "patched": true})
}

// activity keeps the reports node proxies send.
func (a *fakeAuthAPI) activity(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+testSAToken {
		http.Error(w, "caller not allowed", http.StatusUnauthorized)
		return
	}
	rep, err := activity.DecodeReport(r.Body)
	if err != nil {
		http.Error(w, "bad report", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.reports = append(a.reports, rep)
	a.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (a *fakeAuthAPI) setOnWake(f func(user string)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onWake = f
}

func (a *fakeAuthAPI) allReports() []activity.Report {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]activity.Report(nil), a.reports...)
}
