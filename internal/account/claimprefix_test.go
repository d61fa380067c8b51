package account

import (
	"strings"
	"testing"
)

func TestCheckClaimPrefix(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"dsh-", true},
		{"a", true},
		{"team-7-", true},
		{strings.Repeat("p", MaxClaimPrefixLen), true},
		{strings.Repeat("p", MaxClaimPrefixLen+1), false},
		{"", false},
		{"7dsh-", false},
		{"-dsh", false},
		{"Dsh-", false},
		{"dsh_", false},
		{"dsh.", false},
		{"dsh/", false},
	} {
		if err := CheckClaimPrefix(tc.prefix); (err == nil) != tc.ok {
			t.Errorf("CheckClaimPrefix(%q) = %v, want ok %v", tc.prefix, err, tc.ok)
		}
	}
}
