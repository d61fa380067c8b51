package account

import (
	"time"

	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// KeepAwakeUntil reads c's AnnotationKeepAwakeUntil; zero when c is nil,
// has none, or it does not parse.
func KeepAwakeUntil(c *extensions.SandboxClaim) time.Time {
	if c == nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, c.Annotations[AnnotationKeepAwakeUntil])
	if err != nil {
		return time.Time{}
	}
	return t
}
