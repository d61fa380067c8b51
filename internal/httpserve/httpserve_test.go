package httpserve

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestShutdownLetsARequestInFlightFinish ends the context while a request
// is in the handler: the request still gets its answer, new connections
// are refused, and Serve returns nil.
func TestShutdownLetsARequestInFlightFinish(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "done")
	}), ReadHeaderTimeout: time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, srv, ln, time.Minute) }()

	answered := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String())
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- string(b)
	}()
	testkit.Receive(t, "the request in the handler", entered)
	cancel()
	testkit.Eventually(t, "the listener closed", func() bool {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	close(release)
	if got := testkit.Receive(t, "the answer", answered); got != "done" {
		t.Errorf("request in flight got %q, want its answer", got)
	}
	if err := testkit.Receive(t, "Serve returning", served); err != nil {
		t.Errorf("Serve after a clean shutdown: %v", err)
	}
}

// TestServeReportsAListenerThatFails returns the error of a listener that
// stops accepting without the context ending.
func TestServeReportsAListenerThatFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := Serve(t.Context(), &http.Server{ReadHeaderTimeout: time.Minute}, ln, time.Minute); err == nil {
		t.Error("Serve on a closed listener: nil error")
	}
}
