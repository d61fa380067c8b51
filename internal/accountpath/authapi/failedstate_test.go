package authapi

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLandingShowsFailedPod: a signed-in user whose sandbox's pod stopped
// (node eviction, spot reclaim) sees the state named, that it is being
// started again, and a page that refreshes itself.
func TestLandingShowsFailedPod(t *testing.T) {
	p, err := loadPages()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{pages: p}
	w := httptest.NewRecorder()
	s.renderPage(w, httptest.NewRequest("GET", "/", nil), 200, pageData{Page: "landing", User: "alice", State: StateFailed, AgentURL: agentPath("alice"), Refresh: true})
	page := w.Body.String()
	for _, want := range []string{`state-Failed">Failed</span>`, "Its pod stopped", "being started again", `http-equiv="refresh"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
