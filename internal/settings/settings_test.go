package settings

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestValues(t *testing.T) {
	var d time.Duration
	for in, want := range map[string]time.Duration{"90": 90 * time.Second, "0.5": 500 * time.Millisecond, "10m": 10 * time.Minute, " 2s ": 2 * time.Second} {
		if err := Duration(&d).Set(in); err != nil || d != want {
			t.Errorf("Duration(%q) = %v, %v; want %v", in, d, err, want)
		}
	}
	for _, bad := range []string{"", "ten", "5x", "NaN", "inf", "-Inf", "1e300", "9223372037", "-9223372037"} {
		if Duration(&d).Set(bad) == nil {
			t.Errorf("Duration(%q) accepted", bad)
		}
	}
	var b bool
	if Bool(&b).Set("1") != nil || !b || Bool(&b).Set("maybe") == nil {
		t.Error("Bool parsing is wrong")
	}
	var n int
	if Int(&n).Set(" 7 ") != nil || n != 7 || Int(&n).Set("7.5") == nil {
		t.Error("Int parsing is wrong")
	}
}

func TestLoadPrecedenceAndProblems(t *testing.T) {
	var addr string
	var limit int
	var window time.Duration
	list := []Setting{
		Var("addr", "ADDR", "", String(&addr)),
		Var("limit", "LIMIT", "", Int(&limit)),
		Var("window", "WINDOW", "", Duration(&window)),
	}
	env := testkit.Env(map[string]string{"ADDR": ":1", "LIMIT": "lots", "WINDOW": "thirty"})
	problems, err := Load("t", list, []string{"--addr", ":2", "--window", "30"}, env, io.Discard, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if addr != ":2" || window != 30*time.Second {
		t.Errorf("addr %q window %v: flags must win over the environment", addr, window)
	}
	if len(problems) != 1 || !strings.HasPrefix(problems[0].Error(), "LIMIT=") {
		t.Errorf("problems %v, want the one unparsable LIMIT (a flag set WINDOW instead of its bad variable)", problems)
	}
	if _, err := Load("t", list, []string{"--help"}, func(string) string { return "" }, io.Discard, func() {}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
	if _, err := Load("t", list, []string{"stray"}, func(string) string { return "" }, io.Discard, func() {}); err == nil {
		t.Error("a stray argument was accepted")
	}
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{args: []string{"--n", "2"}},
		{args: []string{"--n", "2", "a", "b"}, wantErr: `unexpected arguments ["a" "b"]`},
		{args: []string{"--m"}, wantErr: "flag provided but not defined: -m"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		n := fs.Int("n", 0, "")
		err := Parse(fs, tt.args)
		if got := fmt.Sprint(err); (tt.wantErr == "" && err != nil) || (tt.wantErr != "" && got != tt.wantErr) {
			t.Errorf("Parse(%q) = %v, want %q", tt.args, err, tt.wantErr)
		}
		if tt.wantErr == "" && *n != 2 {
			t.Errorf("Parse(%q) set n = %d", tt.args, *n)
		}
	}
}

func TestPrefixes(t *testing.T) {
	got, err := Prefixes("TRUSTED_PROXIES", "10.0.0.0/8, 127.0.0.1 ,,::1")
	if err != nil || len(got) != 3 || got[1].Bits() != 32 {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := Prefixes("TRUSTED_PROXIES", "10.0.0.0/33,nope"); err == nil {
		t.Error("bad entries accepted")
	}
}

func TestLoadVersion(t *testing.T) {
	var out bytes.Buffer
	var s string
	list := []Setting{Var("name", "NAME", "a name", String(&s))}
	problems, err := Load("cmd", list, []string{"--version"}, func(string) string { return "" }, &out, func() { t.Error("usage called for --version") })
	if !errors.Is(err, ErrVersion) || problems != nil {
		t.Fatalf("Load(--version) = %v, %v; want ErrVersion", problems, err)
	}
	if !regexp.MustCompile(`^cmd version \S+, revision \S+, go\S+\n$`).MatchString(out.String()) {
		t.Errorf("--version printed %q", out.String())
	}
	var help bytes.Buffer
	Usage(&help, list)
	if !strings.Contains(help.String(), "--version") {
		t.Errorf("usage does not list --version:\n%s", help.String())
	}
}

func TestURLs(t *testing.T) {
	for _, tc := range []struct {
		raw         string
		url, origin bool
	}{
		{"https://gw.example.test", true, true},
		{"http://10.0.0.1:8080/", true, true},
		{"https://gw.example.test/auth", true, false},
		{"https://gw.example.test/?a=1", true, false},
		{"https://u:p@gw.example.test", true, false},
		{"ftp://gw.example.test", false, false},
		{"gw.example.test", false, false},
		{"https://", false, false},
		{"", false, false},
	} {
		if _, err := HTTPURL("X", tc.raw); (err == nil) != tc.url {
			t.Errorf("HTTPURL(%q): %v", tc.raw, err)
		}
		if _, err := Origin("X", tc.raw); (err == nil) != tc.origin {
			t.Errorf("Origin(%q): %v", tc.raw, err)
		}
	}
}
