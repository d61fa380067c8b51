package baseline

import "testing"

func TestStripUser(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/u/alice/bytes/1024", "/bytes/1024"},
		{"/u/alice/", "/"},
		{"/u/alice", "/"},
		{"/other", "/other"},
	} {
		if got := stripUser(tc.in); got != tc.want {
			t.Errorf("stripUser(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
