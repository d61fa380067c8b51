package podlogs

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestHandshakerFindsToken writes a pod's log and checks that the real
// handshaker reads the launch token from it and trades it for the cookie.
func TestHandshakerFindsToken(t *testing.T) {
	root := t.TempDir()
	pod := Pod{Namespace: "bench", Name: "dsh-pool-7", UID: "00000000-0000-4000-8000-000000000007", Container: "dsh", Addr: "10.0.0.10:3080"}
	if err := Write(root, pod, 50, 200); err != nil {
		t.Fatal(err)
	}
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if c, ok := Exchange(string(ctx.QueryArgs().Peek("token"))); ok {
			ctx.Response.Header.Set("Set-Cookie", c)
			ctx.Redirect("/", fasthttp.StatusSeeOther)
			return
		}
		ctx.SetStatusCode(fasthttp.StatusUnauthorized)
	}, MaxIdleWorkerDuration: 10 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	defer func() { srv.Shutdown(); <-done }()

	h, err := handshake.New(handshake.Options{LogRoot: root, Dial: func(string) (net.Conn, error) { return ln.Dial() }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got, err := h.Cookie(t.Context(), handshake.Target{
		User: "alice", Namespace: pod.Namespace, Pod: pod.Name, PodUID: pod.UID, Container: pod.Container, Addr: pod.Addr,
	})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Exchange(Token(pod.Name))
	if !bytes.HasPrefix([]byte(want), []byte(got)) {
		t.Errorf("cookie %q, want the one for %s's token (%q)", got, pod.Name, want)
	}
}

func TestExchangeRefusesOtherTokens(t *testing.T) {
	for _, tok := range []string{"", "bench-launch-", Token("p")[:20], "other-" + Token("p")} {
		if _, ok := Exchange(tok); ok {
			t.Errorf("Exchange(%q) accepted", tok)
		}
	}
	if _, ok := Exchange(Token("p")); !ok {
		t.Error("Exchange refused a launch token")
	}
}
