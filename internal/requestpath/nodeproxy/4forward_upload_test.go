package nodeproxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/sim/agentapp"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// uploadSize is the large upload: far above BufferBodyBytes (1 MiB), so it
// streams to the app and cannot be sent twice.
const uploadSize = 50 << 20

// zeros is an io.Reader of n zero bytes that is not a *strings.Reader, so
// net/http sends it chunked unless told its length.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), z.n)
	clear(p[:n])
	z.n -= n
	return int(n), nil
}

// put uploads size bytes to user's workspace file name; chunked leaves the
// length undeclared.
func (h *harness) put(user, name string, size int64, chunked bool) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPut, h.url("node-a", "/u/"+user+"/api/files/"+name), &zeros{n: size})
	if err != nil {
		h.t.Fatal(err)
	}
	req.Host = testHost
	req.Header.Set("Cookie", cookie(h.session(user)))
	if !chunked {
		req.ContentLength = size
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// TestLargeUploadMeetsStaleHandshake: the app restarted (new launch token,
// the cached cookie refused) while the user was away. A 50 MiB upload,
// declared or chunked, cannot be retried after a 401, so the proxy
// refreshes the handshake before it sends the body, and the upload is
// stored whole. An upload right after one the app accepted costs no
// handshake.
func TestLargeUploadMeetsStaleHandshake(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	alice := h.addUser("alice", "node-a")
	reg := h.nodes["node-a"].reg
	echo(t, h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(h.session("alice"))}))

	for _, chunked := range []bool{false, true} {
		name := fmt.Sprintf("upload-chunked-%v.bin", chunked)
		alice.restart()
		h.clock.Advance(acceptedWithin)
		before := handshakesOf(t, reg)
		resp := h.put("alice", name, uploadSize, chunked)
		body := readAll(t, resp)
		var info agentapp.FileInfo
		if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(body), &info) != nil || info.Size != uploadSize {
			t.Fatalf("%s after an app restart: %d %q, want 201 and %d bytes stored", name, resp.StatusCode, body, uploadSize)
		}
		if n := handshakesOf(t, reg) - before; n != 1 {
			t.Errorf("%s: %v handshakes, want 1 (the refresh before the body)", name, n)
		}
		if s := appStatuses(alice, http.MethodPut, "/api/files/"+name); len(s) != 1 || s[0] != "201" {
			t.Errorf("%s: the app answered %v, want one 201 (no 401 first)", name, s)
		}

		before = handshakesOf(t, reg)
		resp = h.put("alice", "again-"+name, 2<<20, chunked)
		if body := readAll(t, resp); resp.StatusCode != http.StatusCreated {
			t.Fatalf("upload right after an accepted one: %d %q", resp.StatusCode, body)
		}
		if n := handshakesOf(t, reg) - before; n != 0 {
			t.Errorf("upload right after an accepted one: %v handshakes, want 0", n)
		}
	}
}

// TestAbortedLargeUploadIsAnErrorToTheApp: a client that hangs up in the
// middle of a large upload, declared or chunked, after the proxy has begun
// streaming it to the app, leaves the app with a body it cannot read to the
// end (the connection is closed without the missing bytes or the last
// chunk): the app answers its own error and stores nothing, never a
// complete short file. The client is logged as 499.
func TestAbortedLargeUploadIsAnErrorToTheApp(t *testing.T) {
	var toApp streamedBytes
	h := newHarness(t, harnessOpts{modify: func(o *Options) { o.Dial = toApp.dial }})
	alice := h.addUser("alice", "node-a")
	toApp.addr.Store(alice.addr)
	echo(t, h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(h.session("alice"))}))

	for _, chunked := range []bool{false, true} {
		name := fmt.Sprintf("aborted-chunked-%v.bin", chunked)
		c, err := net.Dial("tcp", h.nodes["node-a"].addr)
		if err != nil {
			t.Fatal(err)
		}
		framing := fmt.Sprintf("Content-Length: %d", uploadSize)
		if chunked {
			framing = "Transfer-Encoding: chunked"
		}
		io.WriteString(c, "PUT /u/alice/api/files/"+name+" HTTP/1.1\r\nHost: "+testHost+"\r\nCookie: "+cookie(h.session("alice"))+
			"\r\n"+framing+"\r\n\r\n")
		sent := toApp.total()
		chunk := strings.Repeat("z", 64<<10)
		for range 64 { // 4 MiB of the body
			if chunked {
				fmt.Fprintf(c, "%x\r\n%s\r\n", len(chunk), chunk)
			} else {
				io.WriteString(c, chunk)
			}
		}
		// Hang up once the app has more than the buffered prefix.
		testkit.Eventually(t, name+" streaming to the app", func() bool { return toApp.total()-sent > 2<<20 })
		c.Close()

		testkit.Eventually(t, name+": the app's answer", func() bool { return len(appStatuses(alice, http.MethodPut, "/api/files/"+name)) > 0 })
		if s := appStatuses(alice, http.MethodPut, "/api/files/"+name); len(s) != 1 || s[0] != "400" {
			t.Errorf("%s: the app answered %v, want one 400 (body cut short)", name, s)
		}
		resp := h.get("node-a", "/u/alice/api/files/"+name, map[string]string{"Cookie": cookie(h.session("alice"))})
		if body := readAll(t, resp); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: GET after the abort: %d, %d bytes; want 404 (nothing stored)", name, resp.StatusCode, len(body))
		}
		testkit.Eventually(t, name+": 499 in the access log", func() bool {
			for _, l := range accessLines(t, h.logs) {
				if l["status"] == float64(StatusClientClosed) && l["path"] == "/u/alice/api/files/"+name {
					return true
				}
			}
			return false
		})
	}
}

// streamedBytes counts what the proxy writes to one upstream address.
type streamedBytes struct {
	addr atomic.Value // string, set once the pod runs
	n    atomic.Int64
}

func (s *streamedBytes) dial(addr string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil || addr != s.addr.Load() {
		return c, err
	}
	return &countingConn{Conn: c, n: &s.n}, nil
}

func (s *streamedBytes) total() int64 { return s.n.Load() }

// countingConn counts the bytes written to it.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

var appStatusLine = regexp.MustCompile(`^dsh web: ([A-Z]+) (\S+) (\d+) \d+ms$`)

// appStatuses lists the statuses the app logged for method and path.
func appStatuses(p *pod, method, path string) []string {
	p.log.mu.Lock()
	defer p.log.mu.Unlock()
	var out []string
	for _, l := range p.log.lines {
		if m := appStatusLine.FindStringSubmatch(l); m != nil && m[1] == method && m[2] == path {
			out = append(out, m[3])
		}
	}
	return out
}
