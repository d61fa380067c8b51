package webapp

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/bench/podlogs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPageIsAbout4KiB(t *testing.T) {
	h := New()
	var sizes []int
	for range 2 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, PagePath, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
		sizes = append(sizes, rec.Body.Len())
	}
	if sizes[0] != sizes[1] || sizes[0] != PageSize() {
		t.Errorf("page sizes %v, PageSize %d: want all equal", sizes, PageSize())
	}
	if PageSize() < 3<<10 || PageSize() > 5<<10 {
		t.Errorf("page is %d bytes, want about 4 KiB", PageSize())
	}
}

func TestExchange(t *testing.T) {
	h := New()
	for _, tc := range []struct {
		token string
		want  int
	}{{podlogs.Token("dsh-pool-1"), http.StatusSeeOther}, {"nope", http.StatusUnauthorized}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?token="+tc.token, nil))
		if rec.Code != tc.want {
			t.Errorf("token %q: status %d, want %d", tc.token, rec.Code, tc.want)
		}
		if got := rec.Header().Get("Set-Cookie") != ""; got != (tc.want == http.StatusSeeOther) {
			t.Errorf("token %q: Set-Cookie %q", tc.token, rec.Header().Get("Set-Cookie"))
		}
	}
}
