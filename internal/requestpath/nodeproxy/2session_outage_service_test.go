package nodeproxy

import (
	"io"
	"net"
	"sync"
	"testing"
)

// authService stands in for the auth API's Service in front of its
// replicas: a TCP relay to the harness's auth API stand-in that can be
// stopped, as when every replica is down (new connections refused, open
// ones cut), and started again on the same address.
type authService struct {
	t      *testing.T
	addr   string
	target string // set before the first connection arrives

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newAuthService listens on a free loopback port; set target before use.
func newAuthService(t *testing.T) *authService {
	s := &authService{t: t, addr: "127.0.0.1:0", conns: map[net.Conn]struct{}{}}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// url is the Service's base URL, for Options.AuthAPI.
func (s *authService) url() string { return "http://" + s.addr }

// start accepts connections again on the Service's address.
func (s *authService) start() {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatalf("auth API service stand-in: %v", err)
	}
	s.mu.Lock()
	s.ln, s.addr = ln, ln.Addr().String()
	s.mu.Unlock()
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.relay(c)
		}
	})
}

// stop refuses new connections and cuts the open ones.
func (s *authService) stop() {
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close()
		s.ln = nil
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// relay copies between c and a new connection to the target, both ways.
func (s *authService) relay(c net.Conn) {
	up, err := net.Dial("tcp", s.target)
	if err != nil {
		c.Close()
		return
	}
	s.mu.Lock()
	if s.ln == nil {
		s.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	s.conns[c], s.conns[up] = struct{}{}, struct{}{}
	s.mu.Unlock()
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		dst.Close()
		src.Close()
		s.mu.Lock()
		delete(s.conns, dst)
		delete(s.conns, src)
		s.mu.Unlock()
	}
	s.wg.Go(func() { pipe(up, c) })
	s.wg.Go(func() { pipe(c, up) })
}
