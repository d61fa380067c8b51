package authapi

import (
	"net/url"

	"github.com/sandgate/sandgate/internal/userorigin"
)

// nextOf admits a deep link a browser's sign-in may go on to: a path on
// this site (userorigin.SafeNext: one leading slash, not "//" or "/\",
// printable ASCII, bounded) that also parses as one, with no scheme or
// host. Anything else is refused and the sign-in goes to the agent.
func nextOf(next string) (string, bool) {
	if next == "" || userorigin.SafeNext(next) != next {
		return "", false
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" {
		return "", false
	}
	return next, true
}
