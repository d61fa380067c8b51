package account

import (
	"strings"
	"testing"
)

func TestCheckClaimPrefix(t *testing.T) {
	accepted := map[string]bool{
		"dsh-": true, "a": true, "team-7-": true, strings.Repeat("p", MaxClaimPrefixLen): true,
		strings.Repeat("p", MaxClaimPrefixLen+1): false, "": false, "7dsh-": false, "-dsh": false,
		"Dsh-": false, "dsh_": false, "dsh.": false, "dsh/": false,
	}
	for prefix, ok := range accepted {
		if err := CheckClaimPrefix(prefix); (err == nil) != ok {
			t.Errorf("CheckClaimPrefix(%q) = %v, want accepted %v", prefix, err, ok)
		}
	}
}
