package account

import (
	"strings"
	"testing"
)

var ssoIdentityCases = []struct {
	name, value, want string
	ok                bool
}{
	{"GitHub login", "alice", "alice", true},
	{"GitHub login in mixed case", "Alice", "alice", true},
	{"surrounding space", "  bob\t", "bob", true},
	{"numeric subject", "1234567890", "sso-y526pn2x5xtdbtikueitxuic", true},
	{"UUID subject", "0f8a2c9e-5b1d-4c7e-9a3f-2d6e8b1c4a70", "sso-dcjpzc2eavoui3oy7ntncgxe", true},
	{"subject with a provider prefix", "auth0|64b7f0c2a1", "sso-jypapmkhp5iotekycayeekkq", true},
	{"subjects differing in case are two users", "AbC_1", "sso-l65jj6vblct4vlhlaop4axby", true},
	{"subjects differing in case are two users (lower)", "abc_1", "sso-2sn23hmkumxj6hhvcjuevmeb", true},
	{"reserved name", "admin", "sso-rruxnznviecblppjbc6u33qv", true},
	{"a name of the hashed form", "sso-y526pn2x5xtdbtikueitxuic", "sso-tbvukdvivgyg2mvu3n2ydfyk", true},
	{"longer than a user name", strings.Repeat("a", 41), "sso-yd4l2tn4fmgaged4dq3zcpzk", true},
	{"empty", "", "", false},
	{"only space", "   ", "", false},
	{"inner space", "jane doe", "", false},
	{"control byte", "jane\x00", "", false},
	{"non-ASCII", "jäne", "", false},
	{"longer than a subject may be", strings.Repeat("7", 256), "", false},
}

func TestSSOUserName(t *testing.T) {
	for _, tc := range ssoIdentityCases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := SSOUserName(tc.value)
			if got != tc.want || ok != tc.ok {
				t.Errorf("SSOUserName(%q) = %q, %v; want %q, %v", tc.value, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestSSOUserNameFollowsTheSubjectOnly: the user name is a function of the
// asserted subject alone, so the same subject after a login or e-mail
// change at the provider opens the same account, and another subject never
// does.
func TestSSOUserNameFollowsTheSubjectOnly(t *testing.T) {
	const sub = "248289761001"
	before, _ := SSOUserName(sub)
	after, _ := SSOUserName(" " + sub + " ")
	other, _ := SSOUserName("248289761002")
	if before != after {
		t.Errorf("the same subject maps to %q and %q", before, after)
	}
	if other == before {
		t.Errorf("two subjects map to the same user %q", before)
	}
}

func FuzzSSOUserName(f *testing.F) {
	for _, tc := range ssoIdentityCases {
		f.Add(tc.value)
	}
	f.Fuzz(func(t *testing.T, value string) {
		got, ok := SSOUserName(value)
		if !ok {
			if got != "" {
				t.Fatalf("refused %q but named it %q", value, got)
			}
			return
		}
		if err := ValidateUser(got); err != nil {
			t.Fatalf("SSOUserName(%q) = %q, not a user name: %v", value, got, err)
		}
		if again, _ := SSOUserName(value); again != got {
			t.Fatalf("SSOUserName(%q) is %q, then %q", value, got, again)
		}
		hashed := strings.HasPrefix(got, ssoHashedPrefix)
		if !hashed {
			if got != strings.ToLower(strings.TrimSpace(value)) {
				t.Fatalf("SSOUserName(%q) = %q is neither the value nor its hash", value, got)
			}
			if same, _ := SSOUserName(got); same != got {
				t.Fatalf("the user name %q maps to %q", got, same)
			}
		}
	})
}
