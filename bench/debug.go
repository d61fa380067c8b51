package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"sync/atomic"
	"time"
)

// capture serves a recording of ?seconds=N: start writes it to the
// response, stop ends it.
func capture(start func(io.Writer) error, stop func()) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		secs, err := strconv.Atoi(r.URL.Query().Get("seconds"))
		if err != nil || secs <= 0 {
			http.Error(w, "seconds must be a positive integer", http.StatusBadRequest)
			return
		}
		if err := start(w); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		time.Sleep(time.Duration(secs) * time.Second)
		stop()
	}
}

// lineCounter counts the lines and bytes written to it and drops them.
type lineCounter struct{ lines, bytes atomic.Int64 }

func (c *lineCounter) Write(b []byte) (int, error) {
	c.lines.Add(int64(bytes.Count(b, []byte("\n"))))
	c.bytes.Add(int64(len(b)))
	return len(b), nil
}

// proxyLog counts a proxy role's log output, which /logs reports.
var proxyLog lineCounter

// logCount is what /logs reports: the lines and bytes logged so far.
type logCount struct {
	Lines int64 `json:"lines"`
	Bytes int64 `json:"bytes"`
}

// memStats is what a proxy reports about its memory on /stats.
type memStats struct {
	Goroutines int    `json:"goroutines"`
	HeapInuse  uint64 `json:"heap_inuse"`
	StackInuse uint64 `json:"stack_inuse"`
	Sys        uint64 `json:"sys"`
}

// serveDebug serves /stats (after a GC that returns freed memory to
// the OS, so RSS counts live memory), /profile?seconds=N (a CPU profile),
// /trace?seconds=N (an execution trace), /logs (the log lines and bytes
// written so far) and /heap (a heap profile) on a loopback port of its own and returns its address.
func serveDebug() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listen for debug: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		runtime.GC() // twice in all: sync.Pool's victim caches empty on the second
		debug.FreeOSMemory()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		_ = json.NewEncoder(w).Encode(memStats{
			Goroutines: runtime.NumGoroutine(), HeapInuse: m.HeapInuse, StackInuse: m.StackInuse, Sys: m.Sys,
		})
	})
	mux.HandleFunc("/profile", capture(pprof.StartCPUProfile, pprof.StopCPUProfile))
	mux.HandleFunc("/trace", capture(trace.Start, trace.Stop))
	mux.HandleFunc("/logs", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(logCount{Lines: proxyLog.lines.Load(), Bytes: proxyLog.bytes.Load()})
	})
	mux.HandleFunc("/heap", func(w http.ResponseWriter, _ *http.Request) {
		runtime.GC()
		if err := pprof.Lookup("heap").WriteTo(w, 0); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	go http.Serve(ln, mux)
	return ln.Addr().String(), nil
}
