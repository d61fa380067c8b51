package userorigin

import (
	"fmt"
	"net"
	"strings"

	"github.com/sandgate/sandgate/internal/account"
)

// Mode is how agents are addressed: ROUTING_MODE.
type Mode string

// The routing modes.
const (
	// Path serves every agent under /u/<user>/ on the main host, as the
	// seed does.
	Path Mode = "path"
	// Subdomain serves the agent of <user> at <user>.<USER_DOMAIN>, its
	// own browser origin, and keeps the auth API on the main host.
	Subdomain Mode = "subdomain"
)

// Check reads a routing mode and, in subdomain routing, its user domain.
// modeName and domainName are the two settings as the caller's user sets
// them (ROUTING_MODE, --user-domain); a wrong one's error starts with its
// name, or with nothing when the name is empty. The mode is returned
// whenever it parses, even when the domain is wrong, so that the caller can
// go on checking its own subdomain settings.
func Check(modeName, mode, domainName, domain string) (Mode, error) {
	m, err := parseMode(mode)
	if err != nil {
		return "", named(modeName, err)
	}
	if m == Subdomain {
		if err := validateDomain(domain); err != nil {
			return m, named(domainName, err)
		}
	}
	return m, nil
}

func named(name string, err error) error {
	if name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// parseMode reads a routing mode; empty means Path.
func parseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", Path:
		return Path, nil
	case Subdomain:
		return Subdomain, nil
	}
	return "", fmt.Errorf("routing mode %q is neither %q nor %q", s, Path, Subdomain)
}

// EnterPath is where a user origin takes its entry code.
const EnterPath = "/_sandgate/enter"

// validateDomain checks a user domain: a lower-case DNS name without
// port, under which each user gets one label.
func validateDomain(domain string) error {
	if domain == "" {
		return fmt.Errorf("user domain is required in %s routing", Subdomain)
	}
	if len(domain) > 200 || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") || strings.Contains(domain, "..") {
		return fmt.Errorf("user domain %q is not a DNS name", domain)
	}
	for _, c := range domain {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return fmt.Errorf("user domain %q is not a lower-case DNS name without port", domain)
		}
	}
	return nil
}

// UserOf returns the user whose origin host (a Host header, with or
// without port) names, or false when host is not <user>.<domain> for a
// valid user name. Host names compare case-insensitively.
func UserOf(host, domain string) (string, bool) {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(name)
	label, ok := strings.CutSuffix(name, "."+domain)
	if !ok || domain == "" || account.ValidateUser(label) != nil {
		return "", false
	}
	return label, true
}

// Origin is the origin of user's agent, for a request that reached the
// main host at mainHost: the same scheme and port, <user>.<domain>.
func Origin(secure bool, user, domain, mainHost string) string {
	scheme := "http"
	if secure {
		scheme = "https"
	}
	host := user + "." + domain
	if _, port, err := net.SplitHostPort(mainHost); err == nil && port != "" {
		host = net.JoinHostPort(host, port)
	}
	return scheme + "://" + host
}

// RequestOrigin is scheme://host of a request that reached host.
func RequestOrigin(secure bool, host string) string {
	if secure {
		return "https://" + strings.ToLower(host)
	}
	return "http://" + strings.ToLower(host)
}

// SafeNext returns next when it is a path on the same origin that is safe
// to redirect to (absolute path, not scheme-relative, printable ASCII),
// and "/" otherwise.
func SafeNext(next string) string {
	if next == "" || next[0] != '/' || len(next) > 4096 {
		return "/"
	}
	if len(next) > 1 && (next[1] == '/' || next[1] == '\\') {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c >= 0x7f || c == '\\' || c == '#' {
			return "/"
		}
	}
	return next
}

// ValidateMainHost refuses a main host (host[:port]) that is itself a
// user origin under domain: the platform's own pages would then share an
// origin with that user's agent, and a request for it would be routed to
// the agent.
func ValidateMainHost(mainHost, domain string) error {
	if user, ok := UserOf(mainHost, domain); ok {
		return fmt.Errorf("main host %q is the origin of user %q under user domain %q: use a host outside it", mainHost, user, domain)
	}
	return nil
}
