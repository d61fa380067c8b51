package account

import (
	"errors"
	"fmt"
)

// MaxUserLen keeps `<prefix><user>` within a 63-character DNS label for the
// default prefix, and the user label value valid.
const MaxUserLen = 40

// ErrInvalidUser means a user name breaks the naming rules.
var ErrInvalidUser = errors.New("invalid user name")

// reserved names collide with routes, operators' habits or system accounts.
var reserved = map[string]bool{
	"admin": true, "administrator": true, "root": true, "system": true, "api": true,
	"auth": true, "login": true, "logout": true, "signup": true, "users": true, "u": true,
	"internal": true, "healthz": true, "readyz": true, "metrics": true, "static": true,
	"well-known": true, "default": true, "kube-system": true, "sandgate": true, "www": true,
}

// ValidateUser checks that name is a lowercase DNS label of at most
// MaxUserLen characters, starting with a letter, and not reserved.
func ValidateUser(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidUser)
	case len(name) > MaxUserLen:
		return fmt.Errorf("%w: longer than %d characters", ErrInvalidUser, MaxUserLen)
	case !isLabel(name):
		return fmt.Errorf("%w: use lowercase letters, digits and inner hyphens, starting with a letter", ErrInvalidUser)
	case reserved[name]:
		return fmt.Errorf("%w: %q is reserved", ErrInvalidUser, name)
	}
	return nil
}

// ClaimName is the claim that holds user's account.
func ClaimName(prefix, user string) string { return prefix + user }

// isLabel reports whether name is a lowercase DNS label's characters,
// ^[a-z]([a-z0-9-]*[a-z0-9])?$, checked by hand: the node proxy asks this of
// every request's path.
func isLabel(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' || name[len(name)-1] == '-' {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
