package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestForwarderRoundRobin checks that both backends serve, that a dead
// backend is skipped, and that close ends open connections.
func TestForwarderRoundRobin(t *testing.T) {
	serve := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, name) }))
	}
	a, b := serve("a"), serve("b")
	defer a.Close()
	defer b.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadAddr := strings.TrimPrefix(dead.URL, "http://")
	dead.Close()

	f, err := listenForward("127.0.0.1:0", strings.TrimPrefix(a.URL, "http://"), deadAddr, strings.TrimPrefix(b.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for range 6 {
		// A fresh connection each time, as a round-robin Service sees it.
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get("http://" + f.addr())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen[string(body)]++
	}
	if seen["a"] == 0 || seen["b"] == 0 || seen["a"]+seen["b"] != 6 {
		t.Errorf("responses %v: want both backends and no failures", seen)
	}
	held := &http.Client{Transport: &http.Transport{}}
	if resp, err := held.Get("http://" + f.addr()); err == nil {
		resp.Body.Close()
	}
	if err := f.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + f.addr()); err == nil {
		t.Error("forwarder still accepts after close")
	}
}
