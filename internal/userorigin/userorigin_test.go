package userorigin

import (
	"strings"
	"testing"
)

func TestUserOf(t *testing.T) {
	for _, tt := range []struct {
		host, domain, user string
		ok                 bool
	}{
		{"alice.u.example.com", "u.example.com", "alice", true},
		{"Alice.U.Example.com:8443", "u.example.com", "alice", true},
		{"alice.localhost:8080", "localhost", "alice", true},
		{"u.example.com", "u.example.com", "", false},
		{"a.b.u.example.com", "u.example.com", "", false},
		{"alice.u.example.com.evil.test", "u.example.com", "", false},
		{"aliceu.example.com", "u.example.com", "", false},
		{".u.example.com", "u.example.com", "", false},
		{"-x.u.example.com", "u.example.com", "", false},
		{"alice.u.example.com", "", "", false},
		{"[::1]:80", "u.example.com", "", false},
	} {
		user, ok := UserOf(tt.host, tt.domain)
		if user != tt.user || ok != tt.ok {
			t.Errorf("UserOf(%q, %q) = %q, %v; want %q, %v", tt.host, tt.domain, user, ok, tt.user, tt.ok)
		}
	}
}

func TestOrigin(t *testing.T) {
	for _, tt := range []struct {
		secure         bool
		mainHost, want string
	}{
		{true, "gw.example.com", "https://alice.u.example.com"},
		{false, "localhost:8080", "http://alice.u.example.com:8080"},
	} {
		if got := Origin(tt.secure, "alice", "u.example.com", tt.mainHost); got != tt.want {
			t.Errorf("Origin(%v, %q) = %q, want %q", tt.secure, tt.mainHost, got, tt.want)
		}
	}
}

func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{
		"":                              "/",
		"/":                             "/",
		"/chat?x=1":                     "/chat?x=1",
		"//evil.test/":                  "/",
		"/\\evil.test":                  "/",
		"https://evil.test/":            "/",
		"evil":                          "/",
		"/a b":                          "/",
		"/a\r\nSet-Cookie: x":           "/",
		"/ok#frag":                      "/",
		"/" + strings.Repeat("a", 5000): "/",
	} {
		if got := SafeNext(next); got != want {
			t.Errorf("SafeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		mode, domain string
		want         Mode
		err          string
	}{
		{"", "", Path, ""},
		{"path", "Not A Domain", Path, ""},
		{"subdomain", "u.example.com", Subdomain, ""},
		{"subdomain", "localhost", Subdomain, ""},
		{"subdomains", "u.example.com", "", `MODE: routing mode "subdomains" is neither`},
		{"subdomain", "", Subdomain, "DOMAIN: user domain is required"},
		{"subdomain", "U.example.com", Subdomain, "DOMAIN: user domain"},
		{"subdomain", "u.example.com:80", Subdomain, "DOMAIN: user domain"},
		{"subdomain", ".u", Subdomain, "DOMAIN: user domain"},
		{"subdomain", "a..b", Subdomain, "DOMAIN: user domain"},
	} {
		m, err := Check("MODE", tt.mode, "DOMAIN", tt.domain)
		if m != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.HasPrefix(err.Error(), tt.err) {
			t.Errorf("Check(%q, %q) = %q, %v; want %q, error starting %q", tt.mode, tt.domain, m, err, tt.want, tt.err)
		}
	}
	if _, err := Check("", "subdomain", "", ""); err == nil || !strings.HasPrefix(err.Error(), "user domain") {
		t.Errorf("unnamed domain error = %v, want it to start with the rule", err)
	}
}

func FuzzUserOf(f *testing.F) {
	for _, s := range []string{"alice.u.example.com", "alice.u.example.com:1", "x.alice.u.example.com", "%2e.u.example.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		user, ok := UserOf(host, "u.example.com")
		if !ok {
			return
		}
		if strings.ContainsAny(user, "./:%") || !strings.HasPrefix(strings.ToLower(host), user+".u.example.com") {
			t.Fatalf("UserOf(%q) = %q", host, user)
		}
	})
}

func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/", "//x", "/\\x", "/a?b", "http://x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := SafeNext(next)
		if got != "/" && got != next {
			t.Fatalf("SafeNext(%q) = %q", next, got)
		}
		if got[0] != '/' || strings.HasPrefix(got, "//") || strings.ContainsAny(got, "\\\r\n #") {
			t.Fatalf("SafeNext(%q) = %q is unsafe", next, got)
		}
	})
}

func TestValidateMainHost(t *testing.T) {
	for _, tt := range []struct {
		host, domain string
		ok           bool
	}{
		{"gate.example.test", "example.test", false},
		{"Gate.Example.Test:8443", "example.test", false},
		{"example.test", "example.test", true},
		{"example.test:8443", "users.example.test", true},
		{"a.b.example.test", "example.test", true},
		{"gw.example.test", "users.example.test", true},
	} {
		if err := ValidateMainHost(tt.host, tt.domain); (err == nil) != tt.ok {
			t.Errorf("ValidateMainHost(%q, %q) = %v, want ok=%v", tt.host, tt.domain, err, tt.ok)
		}
	}
}
