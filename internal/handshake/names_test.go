package handshake

import (
	"errors"
	"strings"
	"testing"
)

func TestLogRefValidate(t *testing.T) {
	ok := testRef()
	with := func(f func(*logRef)) logRef { r := ok; f(&r); return r }
	tests := []struct {
		name string
		ref  logRef
		ok   bool
	}{
		{"valid", ok, true},
		{"dotted pod", with(func(r *logRef) { r.pod = "a.b-c.d" }), true},
		{"63-char namespace", with(func(r *logRef) { r.namespace = strings.Repeat("a", 63) }), true},
		{"64-char namespace", with(func(r *logRef) { r.namespace = strings.Repeat("a", 64) }), false},
		{"dotdot namespace", with(func(r *logRef) { r.namespace = ".." }), false},
		{"slash namespace", with(func(r *logRef) { r.namespace = "a/b" }), false},
		{"underscore namespace", with(func(r *logRef) { r.namespace = "a_b" }), false},
		{"upper namespace", with(func(r *logRef) { r.namespace = "Tenants" }), false},
		{"empty pod", with(func(r *logRef) { r.pod = "" }), false},
		{"dotdot pod", with(func(r *logRef) { r.pod = ".." }), false},
		{"traversal pod", with(func(r *logRef) { r.pod = "../../etc" }), false},
		{"inner dotdot pod", with(func(r *logRef) { r.pod = "a..b" }), false},
		{"leading dot pod", with(func(r *logRef) { r.pod = ".a" }), false},
		{"trailing dash pod", with(func(r *logRef) { r.pod = "a-" }), false},
		{"nul pod", with(func(r *logRef) { r.pod = "a\x00b" }), false},
		{"254-char pod", with(func(r *logRef) { r.pod = strings.Repeat("a.", 126) + "aa" }), false},
		{"upper uid", with(func(r *logRef) { r.uid = strings.ToUpper(testUID) }), false},
		{"short uid", with(func(r *logRef) { r.uid = testUID[:35] }), false},
		{"traversal uid", with(func(r *logRef) { r.uid = "../../../../../../../../etc/passwd" }), false},
		{"uid without dashes", with(func(r *logRef) { r.uid = strings.ReplaceAll(testUID, "-", "0") }), false},
		{"dotted container", with(func(r *logRef) { r.container = "a.b" }), false},
		{"dotdot container", with(func(r *logRef) { r.container = ".." }), false},
		{"empty container", with(func(r *logRef) { r.container = "" }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.ref.validate()
			if tc.ok && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidRef) {
				t.Fatalf("got %v, want ErrInvalidRef", err)
			}
		})
	}
}

func TestTargetValidate(t *testing.T) {
	ok := testTarget("127.0.0.1:3080")
	with := func(f func(*Target)) Target { r := ok; f(&r); return r }
	tests := []struct {
		name string
		t    Target
		ok   bool
	}{
		{"valid", ok, true},
		{"empty host", with(func(t *Target) { t.Host = "" }), true},
		{"ipv6 addr", with(func(t *Target) { t.Addr = "[fd00::1]:3080" }), true},
		{"host with port", with(func(t *Target) { t.Host = "gw.example.com:8443" }), true},
		{"no user", with(func(t *Target) { t.User = "" }), false},
		{"user with newline", with(func(t *Target) { t.User = "bob\nx" }), false},
		{"addr without port", with(func(t *Target) { t.Addr = "10.0.0.1" }), false},
		{"addr port zero", with(func(t *Target) { t.Addr = "10.0.0.1:0" }), false},
		{"addr with path", with(func(t *Target) { t.Addr = "10.0.0.1:80/x" }), false},
		{"addr with userinfo", with(func(t *Target) { t.Addr = "a@10.0.0.1:80" }), false},
		{"host with slash", with(func(t *Target) { t.Host = "evil.com/x" }), false},
		{"host with crlf", with(func(t *Target) { t.Host = "a\r\nX-Evil: 1" }), false},
		{"forwarded crlf", with(func(t *Target) { t.ForwardedFor = "1.2.3.4\r\nX-Evil: 1" }), false},
		{"bad pod", with(func(t *Target) { t.Pod = "../x" }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.t.validate()
			if tc.ok && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidRef) {
				t.Fatalf("got %v, want ErrInvalidRef", err)
			}
		})
	}
}

func TestParseLogName(t *testing.T) {
	tests := []struct {
		name    string
		ok      bool
		restart int
		stamp   string
		gz      bool
	}{
		{"0.log", true, 0, "", false},
		{"12.log", true, 12, "", false},
		{"0.log.20260801-120000", true, 0, "20260801-120000", false},
		{"3.log.20260801-120000.gz", true, 3, "20260801-120000", true},
		{"0.log.20260801-120000.tmp", false, 0, "", false},
		{"0.log.20260801-1200", false, 0, "", false},
		{"0.log.gz", false, 0, "", false},
		{"-1.log", false, 0, "", false},
		{"+1.log", false, 0, "", false},
		{"a.log", false, 0, "", false},
		{".log", false, 0, "", false},
		{"0.logx", false, 0, "", false},
		{"9999999999.log", false, 0, "", false},
		{"0.txt", false, 0, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lf, ok := parseLogName(tc.name)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if ok && (lf.restart != tc.restart || lf.stamp != tc.stamp || lf.gzip != tc.gz) {
				t.Errorf("got %+v", lf)
			}
		})
	}
}
