package account

import (
	"fmt"
	"regexp"
)

// MaxClaimPrefixLen leaves room for a MaxUserLen user name in a claim's
// 63-character name.
const MaxClaimPrefixLen = 63 - MaxUserLen

var claimPrefixPattern = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// CheckClaimPrefix is the rule for CLAIM_PREFIX, the start of every
// account claim's name (`<prefix><user>`). The auth API, which names the
// claims, and the node proxies, which look them up, apply this one rule,
// so a prefix one of them accepts is never refused by the other.
func CheckClaimPrefix(p string) error {
	if len(p) > MaxClaimPrefixLen || !claimPrefixPattern.MatchString(p) {
		return fmt.Errorf("claim prefix %q must be lowercase letters, digits and '-', starting with a letter, at most %d characters", p, MaxClaimPrefixLen)
	}
	return nil
}
