package authapi

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLandingShowsStoppedStates: a signed-in user whose sandbox's pod
// stopped (node eviction, spot reclaim) sees the state named, that it is
// being started again, and a page that refreshes itself; one whose sandbox
// the controller gave up on (InvalidConfiguration) sees that only an
// operator can mend it, on a page that does not refresh.
func TestLandingShowsStoppedStates(t *testing.T) {
	p, err := loadPages()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{pages: p}
	for _, tc := range []struct {
		state   string
		refresh bool
		want    []string
	}{
		{StateFailed, true, []string{`state-Failed">Failed</span>`, "Its pod stopped", "being started again", `http-equiv="refresh"`}},
		{StateInvalid, false, []string{`state-Invalid">Invalid</span>`, "rejected its configuration (InvalidConfiguration)", "An operator must fix it", "will not help"}},
	} {
		t.Run(tc.state, func(t *testing.T) {
			w := httptest.NewRecorder()
			s.renderPage(w, httptest.NewRequest("GET", "/", nil), 200, pageData{Page: "landing", User: "alice", State: tc.state, AgentURL: agentPath("alice"), Refresh: tc.refresh})
			page := w.Body.String()
			for _, want := range tc.want {
				if !strings.Contains(page, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			if !tc.refresh && strings.Contains(page, `http-equiv="refresh"`) {
				t.Error("a page that refreshes for a state no wait mends")
			}
		})
	}
}
