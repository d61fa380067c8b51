package authapi

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

var nextCases = []struct {
	next string
	ok   bool
}{
	{"/u/alice/some/page?x=1", true},
	{"/", true},
	{"/u/alice/a%20b?q=%2F%2Fevil", true},
	{"/%2F%2Fevil.example/", true},
	{"", false},
	{"u/alice/", false},
	{"//evil.example/", false},
	{"/\\evil.example", false},
	{"/u/alice\\..\\..\\evil", false},
	{"https://evil.example/", false},
	{"javascript:alert(1)", false},
	{"/u/alice/\x00", false},
	{"/u/alice/\r\nLocation: //evil.example", false},
	{"/u/alice/\t", false},
	{"/u/alice/a b", false},
	{"/u/alice/#top", false},
	{"/u/\u00e4", false},
	{"/" + strings.Repeat("a", 5000), false},
}

func TestNextOf(t *testing.T) {
	for _, tc := range nextCases {
		got, ok := nextOf(tc.next)
		if ok != tc.ok || (ok && got != tc.next) {
			t.Errorf("nextOf(%q) = %q, %v; want ok %v", tc.next, got, ok, tc.ok)
		}
	}
}

// FuzzNextOf: whatever a query or form carries as next, what nextOf
// admits is a path on this site, and the redirect a sign-in answers with
// stays on this host.
func FuzzNextOf(f *testing.F) {
	for _, tc := range nextCases {
		f.Add(tc.next)
	}
	base, _ := url.Parse("http://gw.example/login")
	f.Fuzz(func(t *testing.T, next string) {
		got, ok := nextOf(next)
		if !ok {
			return
		}
		if got != next || len(got) > 4096 || !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.ContainsAny(got, "\\#") {
			t.Fatalf("nextOf(%q) admitted %q", next, got)
		}
		for i := 0; i < len(got); i++ {
			if c := got[i]; c <= ' ' || c >= 0x7f {
				t.Fatalf("nextOf(%q) admitted byte %#x", next, c)
			}
		}
		w := httptest.NewRecorder()
		seeOther(w, httptest.NewRequest(http.MethodPost, "/login", nil), got)
		loc, err := url.Parse(w.Header().Get("Location"))
		if err != nil {
			t.Fatalf("Location %q: %v", w.Header().Get("Location"), err)
		}
		if to := base.ResolveReference(loc); to.Host != base.Host || to.Scheme != base.Scheme {
			t.Fatalf("nextOf(%q) leads to %s", next, to)
		}
	})
}
