package clusterjourney

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/fasthttp/websocket"
)

// sse reads n events of a's event stream through node i.
func (j *journey) sse(i int, a account, n int) {
	j.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, j.origin(i)+"/u/alice/api/events", nil)
	req.Header.Set("Cookie", a.cookie)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := j.client.Do(req)
	if err != nil {
		j.t.Fatalf("event stream on %s: %v", j.e.Nodes[i], err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		j.t.Fatalf("event stream on %s: status %d, type %q", j.e.Nodes[i], resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	got := 0
	for got < n && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data:") {
			got++
		}
	}
	if got < n {
		j.t.Fatalf("event stream on %s ended after %d of %d events: %v", j.e.Nodes[i], got, n, sc.Err())
	}
}

// dialWS opens a's agent WebSocket through node i with its session
// cookie; reads on it time out after 30 s.
func (j *journey) dialWS(i int, a account) *websocket.Conn {
	j.t.Helper()
	d := websocket.Dialer{TLSClientConfig: j.tls, HandshakeTimeout: 30 * time.Second}
	url := "wss" + strings.TrimPrefix(j.origin(i), "https") + "/u/" + a.user + "/api/ws"
	c, resp, err := d.Dial(url, http.Header{"Cookie": {a.cookie}, "Origin": {j.origin(i)}})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		j.t.Fatalf("WebSocket on %s: %v (status %d)", j.e.Nodes[i], err, status)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	return c
}

// readText reads c's next message that is not one of the app's ticks.
func readText(c *websocket.Conn) (string, error) {
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(string(msg), "tick ") {
			return string(msg), nil
		}
	}
}

// websocket checks echo and both ways of closing through node i: the
// app's close code reaches the client, and the client's close is answered.
func (j *journey) websocket(i int, a account) {
	j.t.Helper()
	c := j.dialWS(i, a)
	if err := c.WriteMessage(websocket.TextMessage, []byte("hello "+j.e.Nodes[i])); err != nil {
		j.t.Fatalf("WebSocket write on %s: %v", j.e.Nodes[i], err)
	}
	if got, err := readText(c); err != nil || got != "hello "+j.e.Nodes[i] {
		j.t.Fatalf("WebSocket echo on %s: %q, %v", j.e.Nodes[i], got, err)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte("close:4001")); err != nil {
		j.t.Fatalf("WebSocket write on %s: %v", j.e.Nodes[i], err)
	}
	_, err := readText(c)
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4001 {
		j.t.Fatalf("the app's close 4001 on %s reached the client as %v", j.e.Nodes[i], err)
	}
	c.Close()

	c = j.dialWS(i, a)
	defer c.Close()
	if err := c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")); err != nil {
		j.t.Fatalf("WebSocket close on %s: %v", j.e.Nodes[i], err)
	}
	_, err = readText(c)
	if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure {
		j.t.Fatalf("the client's close 1000 on %s was answered with %v", j.e.Nodes[i], err)
	}
}
