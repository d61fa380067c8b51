package account

import (
	"fmt"
	"strconv"

	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// AnnotationEgressTokensPerDay is an admin's override of the user's model
// tokens per UTC day through the egress listener: a decimal count, 0 for
// no limit. It wins over the node proxies' limits file and default.
const AnnotationEgressTokensPerDay = "sandgate.io/egress-tokens-per-day"

// MaxTokensPerDay bounds the override.
const MaxTokensPerDay = 1_000_000_000_000

// ParseTokensPerDay reads an override's value.
func ParseTokensPerDay(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > MaxTokensPerDay || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("tokens per day must be a whole number from 0 (no limit) to %d, not %q", int64(MaxTokensPerDay), s)
	}
	return n, nil
}

// TokensPerDayOf is c's override, if it carries a valid one; a malformed
// value counts as none, so the node proxies' limits apply.
func TokensPerDayOf(c *extensions.SandboxClaim) (int64, bool) {
	s, ok := c.Annotations[AnnotationEgressTokensPerDay]
	if !ok {
		return 0, false
	}
	n, err := ParseTokensPerDay(s)
	return n, err == nil
}
