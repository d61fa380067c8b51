package nodeproxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// upgradeRequest is a browser's WebSocket handshake for path with cookie.
func upgradeRequest(path, cookieHeader, key string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: " + testHost + "\r\nOrigin: http://" + testHost +
		"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key +
		"\r\nCookie: " + cookieHeader + "\r\n\r\n"
}

// sendHandshake connects to a node proxy serving alice and sends her
// WebSocket handshake with key, and then after in the same write. It
// returns the connection and alice's Cookie header.
func sendHandshake(t *testing.T, key string, after []byte) (net.Conn, string) {
	t.Helper()
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	c, err := net.Dial("tcp", h.nodes["node-a"].addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(testkit.Timeout))
	ck := cookie(h.session("alice"))
	if _, err := c.Write(append([]byte(upgradeRequest("/u/alice/api/ws", ck, key)), after...)); err != nil {
		t.Fatal(err)
	}
	return c, ck
}

// maskedText is a client's text frame of msg (under 126 bytes).
func maskedText(msg string) []byte {
	mask := [4]byte{1, 2, 3, 4}
	f := append([]byte{0x81, 0x80 | byte(len(msg))}, mask[:]...)
	for i := range len(msg) {
		f = append(f, msg[i]^mask[i%4])
	}
	return f
}

// TestUpgradeEarlyFrame: a frame the client sends together with its
// handshake, before it has the 101, reaches the app after the handshake:
// the bytes fasthttp read ahead of the request are kept when the socket
// leaves fasthttp's buffer for the bare connection.
func TestUpgradeEarlyFrame(t *testing.T) {
	c, _ := sendHandshake(t, "dGhlIHNhbXBsZSBub25jZQ==", maskedText("early"))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", resp, err)
	}
	if got := resp.Header.Get("Sec-WebSocket-Accept"); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Errorf("Sec-WebSocket-Accept %q", got)
	}
	frame := make([]byte, 2+len("early"))
	if _, err := io.ReadFull(br, frame); err != nil || string(frame[2:]) != "early" {
		t.Fatalf("echo of the early frame: %q, %v", frame, err)
	}
}

// TestUpgradeRenewsSession: a WebSocket opened with a session past half
// its life gets the renewed cookie on its 101, as any other answer does.
func TestUpgradeRenewsSession(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	tok := h.session("alice")
	h.clock.Advance(testLifetime/2 + time.Second)
	c, resp, err := h.dialWS("node-a", "/u/alice/api/ws", http.Header{"Cookie": {cookie(tok)}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	if renewed := sessionFromSetCookie(t, resp); renewed == "" || renewed == tok {
		t.Errorf("101 without the renewed session: %q", resp.Header.Values("Set-Cookie"))
	}
	echoes(t, c, "after renewal")
}

// TestUpgradeBadKey: a handshake whose key is not 16 bytes in base64 is
// refused with 400 before any upgrade, and the connection goes on serving
// HTTP: no hijack is left behind to hold it.
func TestUpgradeBadKey(t *testing.T) {
	c, ck := sendHandshake(t, "not-a-key", nil)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad key: %v %v", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "Sec-WebSocket-Key") {
		t.Errorf("body %q", body)
	}
	if _, err := io.WriteString(c, "GET /u/alice/api/echo HTTP/1.1\r\nHost: "+testHost+"\r\nCookie: "+ck+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if next, err := http.ReadResponse(br, nil); err != nil || next.StatusCode != http.StatusOK {
		t.Errorf("the next request on the connection: %v %v", next, err)
	}
}
