package localcluster

import "testing"

func TestAddressesComeFromTheRanges(t *testing.T) {
	for _, tc := range []struct{ what, got, want string }{
		{"host", HostAddr.String(), "10.200.0.1"},
		{"kube-dns", DNSAddr.String(), "10.96.0.10"},
		{"node 1", newNode(DefaultPaths, 1).ip.String(), "10.200.0.2"},
		{"node 2", newNode(DefaultPaths, 2).ip.String(), "10.200.0.3"},
		{"node 1 pods", newNode(DefaultPaths, 1).podNet.String(), "10.244.1.0/24"},
		{"node 2 pods", newNode(DefaultPaths, 2).podNet.String(), "10.244.2.0/24"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s, want %s", tc.what, tc.got, tc.want)
		}
	}
}
