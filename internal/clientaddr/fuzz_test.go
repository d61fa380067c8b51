package clientaddr

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzResolve checks that any X-Forwarded-For yields the peer or one of
// its own entries, and that an untrusted peer is never overridden.
func FuzzResolve(f *testing.F) {
	for _, tc := range resolveCases {
		f.Add(tc.peer, strings.Join(tc.xff, "\n"))
	}
	f.Fuzz(func(t *testing.T, peerText, xffText string) {
		peer, err := netip.ParseAddr(peerText)
		if err != nil {
			return
		}
		xff := strings.Split(xffText, "\n")
		got := Resolve(peer, xff, testTrusted)
		peer = peer.Unmap().WithZone("")
		if !In(peer, testTrusted) {
			if got != peer {
				t.Fatalf("untrusted peer %s resolved to %s", peer, got)
			}
			return
		}
		if got == peer {
			return
		}
		found := false
		for _, e := range strings.FieldsFunc(xffText, func(r rune) bool { return r == ',' || r == '\n' }) {
			if a, err := netip.ParseAddr(strings.TrimSpace(e)); err == nil && a.Unmap().WithZone("") == got {
				found = true
			}
		}
		if !found {
			t.Fatalf("resolved %s is neither the peer nor an entry of %q", got, xffText)
		}
	})
}
