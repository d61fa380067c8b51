package handshake

import (
	"fmt"
	"net"
	"strconv"
)

// Length limits from Kubernetes' validation (DNS-1123 label and subdomain).
const (
	maxLabelLen     = 63
	maxSubdomainLen = 253
	maxUserLen      = 253
	maxHeaderLen    = 1024
)

// logRef names one container's log directory. Its fields come from informer
// data and are validated before any path is built from them.
type logRef struct {
	namespace string
	pod       string
	uid       string
	container string
}

// validate reports ErrInvalidRef when a field could not name a real
// container's log directory. The rules are strict enough that a valid field
// can never contain '/', "..", NUL or a leading '.'.
func (r logRef) validate() error {
	switch {
	case !isDNSLabel(r.namespace):
		return fmt.Errorf("%w: namespace", ErrInvalidRef)
	case !isDNSSubdomain(r.pod):
		return fmt.Errorf("%w: pod name", ErrInvalidRef)
	case !isUUID(r.uid):
		return fmt.Errorf("%w: pod uid", ErrInvalidRef)
	case !isDNSLabel(r.container):
		return fmt.Errorf("%w: container", ErrInvalidRef)
	}
	return nil
}

// podDir is the kubelet's directory name for the pod: <ns>_<pod>_<uid>.
func (r logRef) podDir() string { return r.namespace + "_" + r.pod + "_" + r.uid }

// isDNSLabel reports whether s is an RFC 1123 label: lower-case
// alphanumerics and '-', starting and ending alphanumeric, at most 63 bytes.
func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > maxLabelLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isLowerAlnum(c):
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// isDNSSubdomain reports whether s is an RFC 1123 subdomain: dot-separated
// labels, at most 253 bytes in all.
func isDNSSubdomain(s string) bool {
	if len(s) == 0 || len(s) > maxSubdomainLen {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if !isDNSLabel(s[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return true
}

// isUUID reports whether s has the lower-case 8-4-4-4-12 hex form the API
// server gives pod UIDs.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// validAddr reports whether addr is host:port with a plausible host and a
// port in 1..65535, so it can go into a request URI unchanged.
func validAddr(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 || port[0] == '+' {
		return false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !(isLowerAlnum(c) || 'A' <= c && c <= 'Z' || c == '.' || c == '-' || c == ':' || c == '%' || c == '_') {
			return false
		}
	}
	return true
}

// validHost reports whether h can be sent as a Host header: a host name or
// address with an optional port, nothing that would change the request line.
func validHost(h string) bool {
	if len(h) == 0 || len(h) > maxSubdomainLen+8 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(isLowerAlnum(c) || 'A' <= c && c <= 'Z' || c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_') {
			return false
		}
	}
	return true
}

// validText reports whether s is short and free of control characters, as
// required for header values and cache-key parts.
func validText(s string, maxLen int) bool {
	if len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}
