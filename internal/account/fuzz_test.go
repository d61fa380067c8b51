package account

import (
	"regexp"
	"strconv"
	"testing"
)

// labelPattern is the rule isLabel checks by hand, as the fuzz test's
// oracle.
var labelPattern = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)

func FuzzValidateUser(f *testing.F) {
	for _, s := range []string{"bob", "Bob", "a-b", "-a", "a-", "a", "a1", "1a", "admin", "bob/../x", "b\x00b", "ü", "bob\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		valid := len(name) <= MaxUserLen && labelPattern.MatchString(name) && !reserved[name]
		if err := ValidateUser(name); (err == nil) != valid {
			t.Fatalf("ValidateUser(%q) = %v, the rule says valid %v", name, err, valid)
		}
		if !valid {
			return
		}
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				t.Fatalf("accepted %q with rune %q", name, r)
			}
		}
	})
}

func FuzzFromClaim(f *testing.F) {
	f.Add("bob", goodHash(), "1", `[{"sid":"a","exp":1}]`)
	f.Add("bob", "", "", "")
	f.Add("x", "zz", "-5", "[")
	f.Fuzz(func(t *testing.T, user, hash, epoch, revoked string) {
		a, err := FromClaim(claim(managedLabels(user), map[string]string{
			AnnotationTokenHash: hash, AnnotationSessionEpoch: epoch, AnnotationRevokedSessions: revoked,
		}))
		if err != nil {
			return
		}
		if ValidateUser(a.User) != nil || a.Epoch < 0 || len(a.Revoked) > MaxRevoked {
			t.Fatalf("accepted an invalid account %+v", a)
		}
	})
}

func FuzzParseTokensPerDay(f *testing.F) {
	for _, s := range []string{"0", "50000", "1000000000000", "1000000000001", "-1", "+5", "05", "5k", "", " 5", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseTokensPerDay(s)
		if err != nil {
			return
		}
		if n < 0 || n > MaxTokensPerDay || strconv.FormatInt(n, 10) != s {
			t.Fatalf("accepted %q as %d", s, n)
		}
	})
}
