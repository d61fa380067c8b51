package handshake

import (
	"errors"
	"strings"
	"testing"
)

func TestLogRefValidate(t *testing.T) {
	checkVariants(t, testRef(), logRef.validate, []variant[logRef]{
		{"valid", nil, true},
		{"dotted pod", func(r *logRef) { r.pod = "a.b-c.d" }, true},
		{"63-char namespace", func(r *logRef) { r.namespace = strings.Repeat("a", 63) }, true},
		{"64-char namespace", func(r *logRef) { r.namespace = strings.Repeat("a", 64) }, false},
		{"dotdot namespace", func(r *logRef) { r.namespace = ".." }, false},
		{"slash namespace", func(r *logRef) { r.namespace = "a/b" }, false},
		{"underscore namespace", func(r *logRef) { r.namespace = "a_b" }, false},
		{"upper namespace", func(r *logRef) { r.namespace = "Tenants" }, false},
		{"empty pod", func(r *logRef) { r.pod = "" }, false},
		{"dotdot pod", func(r *logRef) { r.pod = ".." }, false},
		{"traversal pod", func(r *logRef) { r.pod = "../../etc" }, false},
		{"inner dotdot pod", func(r *logRef) { r.pod = "a..b" }, false},
		{"leading dot pod", func(r *logRef) { r.pod = ".a" }, false},
		{"trailing dash pod", func(r *logRef) { r.pod = "a-" }, false},
		{"nul pod", func(r *logRef) { r.pod = "a\x00b" }, false},
		{"254-char pod", func(r *logRef) { r.pod = strings.Repeat("a.", 126) + "aa" }, false},
		{"upper uid", func(r *logRef) { r.uid = strings.ToUpper(testUID) }, false},
		{"short uid", func(r *logRef) { r.uid = testUID[:35] }, false},
		{"traversal uid", func(r *logRef) { r.uid = "../../../../../../../../etc/passwd" }, false},
		{"uid without dashes", func(r *logRef) { r.uid = strings.ReplaceAll(testUID, "-", "0") }, false},
		{"dotted container", func(r *logRef) { r.container = "a.b" }, false},
		{"dotdot container", func(r *logRef) { r.container = ".." }, false},
		{"empty container", func(r *logRef) { r.container = "" }, false},
	})
}

func TestTargetValidate(t *testing.T) {
	checkVariants(t, testTarget("127.0.0.1:3080"), Target.validate, []variant[Target]{
		{"valid", nil, true},
		{"empty host", func(t *Target) { t.Host = "" }, true},
		{"ipv6 addr", func(t *Target) { t.Addr = "[fd00::1]:3080" }, true},
		{"host with port", func(t *Target) { t.Host = "gw.example.com:8443" }, true},
		{"no user", func(t *Target) { t.User = "" }, false},
		{"user with newline", func(t *Target) { t.User = "bob\nx" }, false},
		{"addr without port", func(t *Target) { t.Addr = "10.0.0.1" }, false},
		{"addr port zero", func(t *Target) { t.Addr = "10.0.0.1:0" }, false},
		{"addr with path", func(t *Target) { t.Addr = "10.0.0.1:80/x" }, false},
		{"addr with userinfo", func(t *Target) { t.Addr = "a@10.0.0.1:80" }, false},
		{"host with slash", func(t *Target) { t.Host = "evil.com/x" }, false},
		{"host with crlf", func(t *Target) { t.Host = "a\r\nX-Evil: 1" }, false},
		{"forwarded crlf", func(t *Target) { t.ForwardedFor = "1.2.3.4\r\nX-Evil: 1" }, false},
		{"bad pod", func(t *Target) { t.Pod = "../x" }, false},
	})
}

// variant is a change to a valid value and whether validate still accepts
// the changed value; a nil change keeps the value as it is.
type variant[T any] struct {
	name   string
	change func(*T)
	ok     bool
}

// checkVariants runs validate on valid changed by each variant: an
// accepted variant must pass, any other fail with ErrInvalidRef.
func checkVariants[T any](t *testing.T, valid T, validate func(T) error, variants []variant[T]) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			x := valid
			if v.change != nil {
				v.change(&x)
			}
			err := validate(x)
			if v.ok && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !v.ok && !errors.Is(err, ErrInvalidRef) {
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
