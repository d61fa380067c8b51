package load

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
)

// Events reads an SSE stream from url and returns each event's delay: its
// arrival time minus the send time it carries.
func Events(ctx context.Context, url, host, cookie string) ([]time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Host = host
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("open stream: status %d", resp.StatusCode)
	}
	var delays []time.Duration
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		v, ok := strings.CutPrefix(s.Text(), "data: ")
		if !ok {
			continue
		}
		sent, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parse event %q: %w", v, err)
		}
		delays = append(delays, time.Since(time.Unix(0, sent)))
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read stream: %w", err)
	}
	return delays, nil
}

// dialer opens the bench's WebSockets.
var dialer = websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 4 << 10, WriteBufferSize: 4 << 10}

// dial opens one WebSocket.
func dial(ctx context.Context, url, host, cookie string) (*websocket.Conn, error) {
	h := http.Header{"Host": {host}}
	if cookie != "" {
		h.Set("Cookie", cookie)
	}
	c, resp, err := dialer.DialContext(ctx, url, h)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial %s: status %d: %w", url, resp.StatusCode, err)
		}
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	return c, nil
}

// Echo sends n messages of size bytes over one WebSocket, each after the
// previous one came back, and returns the round trips.
func Echo(ctx context.Context, url, host, cookie string, n, size int) ([]time.Duration, error) {
	c, err := dial(ctx, url, host, cookie)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	msg := []byte(strings.Repeat("m", size))
	rtts := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := c.WriteMessage(websocket.TextMessage, msg); err != nil {
			return nil, fmt.Errorf("write: %w", err)
		}
		_, got, err := c.ReadMessage()
		if err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
		if len(got) != size {
			return nil, fmt.Errorf("echo of %d bytes, want %d", len(got), size)
		}
		rtts = append(rtts, time.Since(t0))
	}
	return rtts, nil
}

// Idle opens up to n WebSockets, parallel at a time, and keeps them open
// and silent. It returns the open ones and the first error that stopped
// it from opening more.
func Idle(ctx context.Context, url, host, cookie string, n, parallel int) ([]*websocket.Conn, error) {
	var (
		mu    sync.Mutex
		conns []*websocket.Conn
		errs  []error
		wg    sync.WaitGroup
	)
	next := make(chan struct{})
	go func() {
		defer close(next)
		for range n {
			select {
			case next <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range parallel {
		wg.Go(func() {
			for range next {
				c, err := dial(ctx, url, host, cookie)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					conns = append(conns, c)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return conns, errs[0]
	}
	return conns, nil
}
