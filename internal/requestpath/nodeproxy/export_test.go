package nodeproxy

import "net/http"

// What the end-to-end tests (package nodeproxy_test, on the shipped
// assemblies) share with the internal tests.
var (
	AccessLines  = accessLines
	CloseCode    = closeCode
	Cookie       = cookie
	Echo         = echo
	Echoes       = echoes
	FindCookie   = findCookie
	HandshakesOf = handshakesOf
	RawStatus    = rawStatus
	ReadEvent    = readEvent
	ReadAll      = readAll
	TestHopKey   = testHopKey
)

// Constants of the package and its tests that the end-to-end tests check
// against.
const (
	CloseUnauthenticated = closeUnauthenticated
	EntryStateName       = entryStateName
	TestHost             = testHost
	UpstreamPod          = upstreamPod
)

// findCookie is resp's cookie name with a value, nil without one.
func findCookie(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name && c.Value != "" {
			return c
		}
	}
	return nil
}
