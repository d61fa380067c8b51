package authapi

import (
	"net/url"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/testing/apidoc"
)

// TestAPIDocStatuses sends requests whose answers docs/api.md promises and
// holds each status to the page: the endpoint's row lists it, and one that
// is not the seed's answer to the same request has a row under "Where the
// answers differ from the seed".
func TestAPIDocStatuses(t *testing.T) {
	doc, err := apidoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.warm(t)
	in := e.start(t, nil)
	token, _ := in.signupJSON(t, "alice")
	// A recreate of alice's account running on another replica holds her
	// name with this Lease.
	held := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: in.srv.reserved.name("alice")}}
	if _, err := e.kube.CoordinationV1().Leases(e.ns).Create(t.Context(), held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bearer := map[string]string{"Authorization": "Bearer " + token}
	tests := []struct {
		name, endpoint string
		rq             req
		want, seed     int // seed 0: the seed had no answer to this request
	}{
		{"login, malformed JSON", "POST /login", req{json: `{"user":`}, 400, 0},
		{"login, wrong token", "POST /login", req{json: `{"user":"alice","token":"wrong"}`}, 401, 401},
		{"signup, name taken", "POST /users", req{json: `{"user":"alice"}`}, 409, 409},
		{"signup, malformed JSON", "POST /users", req{json: `["bob"]`}, 400, 0},
		{"signup from a form", "POST /users", req{form: url.Values{"user": {"bob"}}, header: in.origin()}, 303, 303},
		{"recreate while another runs", "POST /recreate", req{header: bearer}, 409, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, path, _ := strings.Cut(tt.endpoint, " ")
			tt.rq.method, tt.rq.path = method, path
			resp, body := in.do(t, tt.rq)
			if resp.StatusCode != tt.want {
				t.Fatalf("%s: %d %s, want %d", tt.endpoint, resp.StatusCode, body, tt.want)
			}
			if err := doc.Lists(tt.endpoint, resp.StatusCode); err != nil {
				t.Error(err)
			}
			if tt.seed != 0 && tt.seed != resp.StatusCode {
				if err := doc.Differs(tt.endpoint, tt.seed, resp.StatusCode); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
