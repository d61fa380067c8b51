package clientaddr

import (
	"net/netip"
	"testing"
)

var testTrusted = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("fd00::/8"),
}

// resolveCases are the rule's table, and the fuzz corpus.
var resolveCases = []struct {
	name, peer string
	xff        []string
	want       string
}{
	{"untrusted peer ignores XFF", "192.0.2.7", []string{"203.0.113.9"}, "192.0.2.7"},
	{"trusted peer without XFF", "10.1.2.3", nil, "10.1.2.3"},
	{"trusted peer, one hop", "10.1.2.3", []string{"203.0.113.9"}, "203.0.113.9"},
	{"client-sent entries left of the client are ignored", "10.1.2.3", []string{"1.1.1.1, 203.0.113.9"}, "203.0.113.9"},
	{"ingress then node proxy: skip both", "10.1.2.3", []string{"203.0.113.9, 10.9.9.9"}, "203.0.113.9"},
	{"two trusted hops over header lines", "10.1.2.3", []string{"8.8.8.8, 203.0.113.9", "10.7.7.7", "10.9.9.9"}, "203.0.113.9"},
	{"spoofed trusted entry left of the client stays unreached", "10.1.2.3", []string{"10.5.5.5, 203.0.113.9"}, "203.0.113.9"},
	{"all entries trusted: the leftmost", "10.1.2.3", []string{"10.5.5.5, 10.6.6.6"}, "10.5.5.5"},
	{"garbage right after the peer: the peer", "10.1.2.3", []string{"not-an-ip"}, "10.1.2.3"},
	{"garbage behind a trusted hop: that hop", "10.1.2.3", []string{"bogus, 10.4.4.4"}, "10.4.4.4"},
	{"garbage left of the client is never read", "10.1.2.3", []string{"bogus, 203.0.113.9"}, "203.0.113.9"},
	{"empty entries are skipped", "10.1.2.3", []string{" , 203.0.113.9 ,, "}, "203.0.113.9"},
	{"ipv6 chain", "fd00::1", []string{"2001:db8::5, fd00::2"}, "2001:db8::5"},
	{"v4-mapped entry is unmapped", "10.1.2.3", []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
	{"v4-mapped trusted peer", "::ffff:10.1.2.3", []string{"203.0.113.9"}, "203.0.113.9"},
	{"zone is dropped", "10.1.2.3", []string{"fe80::1%eth0"}, "fe80::1"},
	{"entry with a port is not an address", "10.1.2.3", []string{"203.0.113.9:4711"}, "10.1.2.3"},
}

func TestResolve(t *testing.T) {
	for _, tc := range resolveCases {
		t.Run(tc.name, func(t *testing.T) {
			got := Resolve(netip.MustParseAddr(tc.peer), tc.xff, testTrusted)
			if got.String() != tc.want {
				t.Errorf("Resolve(%s, %q) = %s, want %s", tc.peer, tc.xff, got, tc.want)
			}
		})
	}
}

func TestResolveInvalidPeer(t *testing.T) {
	if got := Resolve(netip.Addr{}, []string{"203.0.113.9"}, testTrusted); got.IsValid() {
		t.Errorf("Resolve without a peer = %s, want the zero Addr", got)
	}
}

func TestWalkTrustsByFunction(t *testing.T) {
	node := netip.MustParseAddr("192.168.1.20")
	isNode := func(a netip.Addr) bool { return a == node }
	if got := Walk(node, []string{"198.51.100.4"}, isNode); got.String() != "198.51.100.4" {
		t.Errorf("Walk behind a node = %s", got)
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"192.0.2.7", "192.0.2.7/32"},
		{"::ffff:192.0.2.7", "192.0.2.7/32"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
	} {
		if got := Key(netip.MustParseAddr(tc.addr)); got.String() != tc.want {
			t.Errorf("Key(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
	if Key(netip.Addr{}).IsValid() {
		t.Error("Key of the zero Addr is valid")
	}
}
