package clusterjourney

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/clusterinstall"
)

// journey is one user's way through the platform, over the real entries.
type journey struct {
	t      *failureT
	e      clusterinstall.Entries
	client *http.Client
	tls    *tls.Config
	timing []string
	probes map[string]bool // pods with a probe container
}

func newJourney(t *testing.T, e clusterinstall.Entries) *journey {
	cfg, err := clusterinstall.EntriesTLS(e.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	return &journey{t: &failureT{T: t}, e: e, tls: cfg, client: &http.Client{
		Transport:     &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: false},
		Timeout:       90 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// step logs the start of a step and returns the function that records how
// long it took.
func (j *journey) step(name string) func() {
	j.t.Logf("step: %s", name)
	j.t.step = name
	start := time.Now()
	return func() {
		j.t.step = ""
		d := time.Since(start).Round(time.Millisecond)
		j.timing = append(j.timing, fmt.Sprintf("%-58s %9s", name, d))
		j.t.Logf("step done: %s (%s)", name, d)
	}
}

// origin is node i's entry as a browser names it.
func (j *journey) origin(i int) string { return strings.TrimSuffix(j.e.URLs[i], "/") }

// do sends a request to node i's entry; header values are set as given.
func (j *journey) do(i int, method, path, body string, hdr map[string]string) (*http.Response, string) {
	j.t.Helper()
	resp, data, err := j.send(i, method, path, body, hdr)
	if err != nil {
		j.t.Fatal(err)
	}
	return resp, data
}

// send is do for any goroutine: it returns what failed instead of
// failing the test.
func (j *journey) send(i int, method, path, body string, hdr map[string]string) (*http.Response, string, error) {
	req, err := http.NewRequest(method, j.origin(i)+path, strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	for k, v := range hdr {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := j.client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("%s %s on %s: %w", method, path, j.e.Nodes[i], err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data), nil
}

// expect fails unless the answer has the wanted status.
func (j *journey) expect(resp *http.Response, body string, want int, what string) {
	j.t.Helper()
	if resp.StatusCode != want {
		j.t.Fatalf("%s: status %d, want %d; body: %.400s", what, resp.StatusCode, want, body)
	}
}
