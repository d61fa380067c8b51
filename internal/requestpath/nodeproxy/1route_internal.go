package nodeproxy

import (
	"net/url"
	"path"
	"strings"
)

// internalSegment is the first path segment of the auth API's internal
// endpoints, which node proxies call themselves and never forward from
// clients.
const internalSegment = "internal"

// maxUnescapes bounds how many layers of percent-encoding isInternal
// peels off: one is what the auth API's router decodes, the rest catch a
// server or middleware that decodes again.
const maxUnescapes = 3

// isInternal reports whether a raw request path could reach the auth
// API's internal endpoints once a server decodes and cleans it: its first
// segment, after percent-decoding (up to maxUnescapes times), turning
// backslashes into slashes, resolving dot and empty segments and dropping
// ";" parameters, is "internal" in any case. A raw path with a malformed
// escape is refused too: no router reads it as we would.
func isInternal(raw string) bool {
	p := raw
	for i := range maxUnescapes + 1 {
		if firstSegment(p) == internalSegment {
			return true
		}
		next, err := url.PathUnescape(p)
		if err != nil {
			return i == 0
		}
		if next == p {
			return false
		}
		p = next
	}
	return true
}

// firstSegment is the lower-cased first segment of p once cleaned as a
// router would clean it.
func firstSegment(p string) string {
	p = path.Clean("/" + strings.ReplaceAll(p, `\`, "/"))
	seg, _, _ := strings.Cut(p[1:], "/")
	seg, _, _ = strings.Cut(seg, ";")
	return strings.ToLower(seg)
}
