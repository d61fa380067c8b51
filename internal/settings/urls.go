package settings

import (
	"fmt"
	"net/url"
)

// HTTPURL checks that the setting name holds an absolute http(s) URL.
func HTTPURL(name, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q is not an http(s) URL", name, raw)
	}
	return u, nil
}

// Origin checks that the setting name holds an origin,
// http(s)://host[:port] with at most a "/" after it.
func Origin(name, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%s %q must be http(s)://host[:port]", name, raw)
	}
	return u, nil
}
