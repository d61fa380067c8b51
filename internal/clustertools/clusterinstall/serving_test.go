package clusterinstall

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// entry serves TLS with the certificate Install writes, answering 503 to
// the first refusals requests and 200 after, as a node proxy's NodePort
// does while the auth API behind it starts.
func entry(t *testing.T, refusals int32) (url, caFile string, asked *atomic.Int32) {
	t.Helper()
	dir := t.TempDir()
	caFile, err := writeCertificate(dir, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	asked = new(atomic.Int32)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) <= refusals {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("<!doctype html>landing"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL + "/", caFile, asked
}

func TestWaitServingWaitsForTheLandingPage(t *testing.T) {
	u, ca, asked := entry(t, 3)
	if err := WaitServing(t.Context(), []string{u}, ca); err != nil {
		t.Fatalf("WaitServing: %v", err)
	}
	if n := asked.Load(); n != 4 {
		t.Fatalf("asked %d times, want 3 refusals and one answer", n)
	}
}

func TestWaitServingNamesTheEntryItGaveUpOn(t *testing.T) {
	good, ca, _ := entry(t, 0)
	bad, _, _ := entry(t, 1<<30)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	// bad has its own CA: good's does not verify it, so the error is TLS.
	err := WaitServing(ctx, []string{good, bad}, ca)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("WaitServing = %v, want an error naming %s and its certificate", err, bad)
	}
}

func TestWaitServingReportsTheLastAnswer(t *testing.T) {
	u, ca, _ := entry(t, 1<<30)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	err := WaitServing(ctx, []string{u}, ca)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("WaitServing = %v, want the entry's 503", err)
	}
}

func TestWaitServingNeedsTheCA(t *testing.T) {
	if err := WaitServing(t.Context(), []string{"https://127.0.0.1:1/"}, filepath.Join(t.TempDir(), "none.crt")); err == nil {
		t.Fatal("WaitServing without a CA file succeeded")
	}
}
