package nodeproxy

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/userorigin"
)

func TestOptionsValidate(t *testing.T) {
	bad := Options{
		AuthAPI: "ftp://x/y", RenewPath: "renew", CookieName: "bad name", PeerPort: 70000, HopKey: []byte("short"),
		MaxBodyBytes: -1, HeaderTimeout: -1, HeaderAllowlist: []string{"Cookie", "X-Forwarded-User", "bad header"},
	}
	err := bad.Validate()
	for _, want := range []string{"node name", "directory", "auth API URL", "renew path", "cookie name", "peer port", "hop key of 5 bytes",
		"max body bytes", "header timeout", `"Cookie" can never`, `"X-Forwarded-User" can never`, "not a header name"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want a %q problem", err, want)
		}
	}
	secure := Options{CookieName: "__Host-x"}
	if err := secure.Validate(); err == nil || !strings.Contains(err.Error(), "COOKIE_SECURE") {
		t.Errorf("__Host- cookie without Secure: %v", err)
	}
}

func TestDefaultCookieName(t *testing.T) {
	if o := (Options{}).withDefaults(); o.CookieName != DefaultCookieName {
		t.Errorf("insecure default cookie %q", o.CookieName)
	}
	if o := (Options{CookieSecure: true}).withDefaults(); o.CookieName != DefaultSecureCookieName {
		t.Errorf("secure default cookie %q", o.CookieName)
	}
}

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		close  int
		retry  bool
	}{
		{ErrBadRequest, 400, 1011, false},
		{ErrCrossOrigin, 403, 1011, false},
		{ErrServiceWorker, 403, 1011, false},
		{ErrNotFound, 404, 1011, false},
		{ErrUnauthenticated, 401, 4401, false},
		{informer.ErrNoAccount, 401, 4401, false},
		{informer.ErrInvalidAccount, 401, 4401, false},
		{informer.ErrNotSynced, 503, 1013, true},
		{ErrBodyTooLarge, 413, 1011, false},
		{ErrClientClosed, 499, 1011, false},
		{ErrTooManyInFlight, 503, 1011, true},
		{handshake.ErrThrottled, 503, 1011, true},
		{ErrSuspended, 503, 1011, true},
		{ErrNotReady, 503, 1011, true},
		{ErrHopLoop, 503, 1011, true},
		{ErrPeerDown, 503, 1011, true},
		{handshake.ErrNoToken, 503, 1011, true},
		{handshake.ErrNoLogs, 503, 1011, true},
		{handshake.ErrExchange, 502, 1011, false},
		{handshake.ErrNoCookie, 502, 1011, false},
		{ErrUpstream, 502, 1011, false},
		{ErrUpstreamTimeout, 504, 1011, false},
		{handshake.ErrInvalidRef, 500, 1011, false},
		{errors.New("surprise"), 500, 1011, false},
	} {
		r := resultOf(errors.Join(errors.New("context"), tc.err))
		if r.status != tc.status || r.wsClose != tc.close || r.retryAfter != tc.retry {
			t.Errorf("resultOf(%v) = %+v, want %d/%d/%v", tc.err, r, tc.status, tc.close, tc.retry)
		}
	}
}

func TestOptionsValidateOrigins(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    Options
		want string // "" for no such problem
	}{
		{"main host is a user origin", Options{RoutingMode: userorigin.Subdomain, UserDomain: "example.test", PublicOrigin: "https://gate.example.test"}, `main host "gate.example.test" is the origin of user "gate"`},
		{"main host with port is a user origin", Options{RoutingMode: userorigin.Subdomain, UserDomain: "example.test", PublicOrigin: "https://Gate.Example.Test:8443"}, "is the origin of user"},
		{"main host is the user domain", Options{RoutingMode: userorigin.Subdomain, UserDomain: "example.test", PublicOrigin: "https://example.test"}, ""},
		{"main host outside the user domain", Options{RoutingMode: userorigin.Subdomain, UserDomain: "users.example.test", PublicOrigin: "https://example.test"}, ""},
		{"auth proxy header is a cookie", Options{AuthProxyHeader: "Cookie"}, "auth proxy header"},
		{"auth proxy header is hop-by-hop", Options{AuthProxyHeader: "Connection"}, "auth proxy header"},
		{"auth proxy header is not a name", Options{AuthProxyHeader: "Remote User"}, "auth proxy header"},
		{"auth proxy header", Options{AuthProxyHeader: "Remote-User"}, ""},
		{"auth proxy header allowlisted", Options{AuthProxyHeader: "X-User", HeaderAllowlist: []string{"x-user"}}, `header "x-user" can never be forwarded`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			for _, topic := range []string{"main host", "auth proxy header"} {
				has := err != nil && strings.Contains(err.Error(), topic)
				if tt.want == "" && has {
					t.Errorf("Validate() = %v, want no %s problem", err, topic)
				}
			}
			if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}
