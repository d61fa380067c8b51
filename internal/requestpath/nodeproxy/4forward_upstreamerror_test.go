package nodeproxy

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestUpstreamError: a failed round trip is classified by what happened,
// not quoted; only a connection that was never made is errNoConnection,
// which a hop turns into 503 (peerDown) and the other upstreams keep.
func TestUpstreamError(t *testing.T) {
	opErr := func(op string, err error) error { return &net.OpError{Op: op, Net: "tcp", Err: err} }
	for _, tc := range []struct {
		name      string
		err       error
		want      error
		noConn    bool
		says      string
		hopStatus int
	}{
		{"dial refused", opErr("dial", &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}), ErrUpstream, true, "dial: connection refused", 503},
		{"dial timed out", opErr("dial", os.ErrDeadlineExceeded), ErrUpstreamTimeout, true, "in time", 503},
		{"read timed out", opErr("read", os.ErrDeadlineExceeded), ErrUpstreamTimeout, false, "no response in time", 504},
		{"read reset", opErr("read", &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}), ErrUpstream, false, "read: connection reset by peer", 502},
		{"closed early", io.ErrUnexpectedEOF, ErrUpstream, false, "connection closed early", 502},
		{"garbage", errors.New(`bad response "secret bytes"`), ErrUpstream, false, "malformed response", 502},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := upstreamError(tc.err)
			if !errors.Is(got, tc.want) || errors.Is(got, errNoConnection) != tc.noConn || !strings.Contains(got.Error(), tc.says) {
				t.Errorf("upstreamError = %v; want %v, no connection %v, saying %q", got, tc.want, tc.noConn, tc.says)
			}
			if strings.Contains(got.Error(), "secret") {
				t.Errorf("upstreamError quotes the response: %v", got)
			}
			if s := resultOf(peerDown(got)).status; s != tc.hopStatus {
				t.Errorf("a hop failing so answers %d, want %d", s, tc.hopStatus)
			}
		})
	}
}
