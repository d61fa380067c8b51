package apidoc

import (
	"strings"
	"testing"
)

const page = "# API\n\n## Endpoints\n\n" +
	"| Method and path | Who | Success | Refusals |\n|---|---|---|---|\n" +
	"| `POST /login` | anyone | JSON: 200; form: 303 | 401, 403 |\n" +
	"| `GET /` | anyone | 200 landing page | — |\n\n" +
	DifferencesHeading + "\n\n| request | the seed | sandgate | why |\n|---|---|---|---|\n" +
	"| `GET /u/<user>/` signed in as another user | 401 | 403 page | a link to one's own agent |\n"

func TestPage(t *testing.T) {
	p, err := parse(page)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  error
		want string // "" for no error, else a part of the message
	}{
		{"listed success", p.Lists("POST /login", 303), ""},
		{"listed refusal", p.Lists("POST /login", 401), ""},
		{"unlisted refusal", p.Lists("POST /login", 400), "does not list 400"},
		{"unknown endpoint", p.Lists("POST /logout", 204), "no row `POST /logout`"},
		{"owned difference", p.Differs("GET /u/<user>/", 401, 403), ""},
		{"other codes", p.Differs("GET /u/<user>/", 401, 404), "answers `GET /u/<user>/` with 404"},
		{"no row", p.Differs("POST /login", 303, 200), "has no row"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			switch {
			case tt.want == "" && tt.err != nil:
				t.Errorf("err = %v, want none", tt.err)
			case tt.want != "" && (tt.err == nil || !strings.Contains(tt.err.Error(), tt.want)):
				t.Errorf("err = %v, want one with %q", tt.err, tt.want)
			}
		})
	}
}

func TestEmptyPageRefused(t *testing.T) {
	if _, err := parse("# API\n\n## Endpoints\n"); err == nil {
		t.Error("a page without tables parsed")
	}
}

// TestTheRealPage reads docs/api.md itself: both tables are there.
func TestTheRealPage(t *testing.T) {
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Lists("POST /users", 201); err != nil {
		t.Error(err)
	}
}
