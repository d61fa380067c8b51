package account

import (
	"strconv"
	"testing"
)

func FuzzValidateUser(f *testing.F) {
	for _, s := range []string{"bob", "Bob", "a-b", "-a", "admin", "bob/../x", "b\x00b", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidateUser(name) != nil {
			return
		}
		if len(name) > MaxUserLen || !userPattern.MatchString(name) || reserved[name] {
			t.Fatalf("accepted %q", name)
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
