package main

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// forwarder is the demo's stand-in for a Service: it accepts TCP
// connections on one address and relays each to the next backend in turn,
// trying the others when one refuses. It stands for the auth API's
// ClusterIP Service (two replicas) and for each node's entry port (the
// NodePort Service that kube-proxy would program).
type forwarder struct {
	ln       net.Listener
	backends []string
	next     atomic.Uint64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// listenForward binds addr and starts relaying connections to backends.
func listenForward(addr string, backends ...string) (*forwarder, error) {
	if len(backends) == 0 {
		return nil, errors.New("forwarder needs a backend")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	f := &forwarder{ln: ln, backends: backends, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// addr is the address the forwarder listens on.
func (f *forwarder) addr() string { return f.ln.Addr().String() }

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		if !f.track(c) {
			c.Close()
			return
		}
		f.wg.Add(1)
		go f.relay(c)
	}
}

// relay copies bytes both ways between the client and a backend.
func (f *forwarder) relay(client net.Conn) {
	defer f.wg.Done()
	defer f.untrack(client)
	start := f.next.Add(1)
	var backend net.Conn
	for i := range f.backends {
		c, err := net.Dial("tcp", f.backends[(int(start)+i)%len(f.backends)])
		if err == nil {
			backend = c
			break
		}
	}
	if backend == nil || !f.track(backend) {
		if backend != nil {
			backend.Close()
		}
		return
	}
	defer f.untrack(backend)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(backend, client)
	go pipe(client, backend)
	<-done
	<-done
}

func (f *forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

// close stops accepting, cuts every relayed connection and waits for the
// relays to end.
func (f *forwarder) close() error {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	err := f.ln.Close()
	f.wg.Wait()
	return err
}
