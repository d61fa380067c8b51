// Package apidoc reads docs/api.md as the handlers' tests check it: the
// endpoint table's success and refusal codes, and the table of answers that
// differ from the seed gateway's. A test that sees a status the page does not
// list, or a difference from the seed the page does not own up to, fails.
// Tests only: no shipped binary imports it.
package apidoc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sandgate/sandgate/internal/testing/clustertest"
)

// DifferencesHeading opens the section of docs/api.md that lists where
// sandgate answers otherwise than the seed.
const DifferencesHeading = "## Where the answers differ from the seed"

// Page is docs/api.md's two tables.
type Page struct {
	// endpoints: "POST /login" -> the codes its row names.
	endpoints map[string][]int
	// differences: "POST /users" -> rows of [the seed's cell, sandgate's cell].
	differences map[string][][2]string
}

var (
	endpointCell = regexp.MustCompile("^`([A-Z]+ [^`]+)`")
	code         = regexp.MustCompile(`\b[1-5][0-9]{2}\b`)
)

// Load reads docs/api.md of the module the tests run in.
func Load() (*Page, error) {
	root, err := clustertest.ModuleRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, "docs", "api.md"))
	if err != nil {
		return nil, fmt.Errorf("read the API page: %w", err)
	}
	return parse(string(data))
}

func parse(text string) (*Page, error) {
	p := &Page{endpoints: map[string][]int{}, differences: map[string][][2]string{}}
	section := ""
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "## ") {
			section = line
			continue
		}
		cells := row(line)
		if len(cells) < 3 {
			continue
		}
		m := endpointCell.FindStringSubmatch(cells[0])
		if m == nil {
			continue
		}
		switch section {
		case "## Endpoints":
			for _, c := range code.FindAllString(strings.Join(cells[2:], " "), -1) {
				n, _ := strconv.Atoi(c)
				p.endpoints[m[1]] = append(p.endpoints[m[1]], n)
			}
		case DifferencesHeading:
			p.differences[m[1]] = append(p.differences[m[1]], [2]string{cells[1], cells[2]})
		}
	}
	if len(p.endpoints) == 0 || len(p.differences) == 0 {
		return nil, fmt.Errorf("docs/api.md: no endpoint table under \"## Endpoints\" or no rows under %q", DifferencesHeading)
	}
	return p, nil
}

// row splits a Markdown table row into its cells, or returns nil.
func row(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
		return nil
	}
	cells := strings.Split(strings.Trim(line, "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// Lists returns an error unless the endpoint table's row for endpoint
// ("POST /login") names status among its successes or refusals.
func (p *Page) Lists(endpoint string, status int) error {
	codes, ok := p.endpoints[endpoint]
	if !ok {
		return fmt.Errorf("docs/api.md's endpoint table has no row `%s`", endpoint)
	}
	if slices.Contains(codes, status) {
		return nil
	}
	return fmt.Errorf("docs/api.md's row `%s` does not list %d (it lists %v)", endpoint, status, codes)
}

// Differs returns an error unless the differences table has a row for
// endpoint whose seed cell names seed and whose sandgate cell names got.
func (p *Page) Differs(endpoint string, seed, got int) error {
	for _, cells := range p.differences[endpoint] {
		if names(cells[0], seed) && names(cells[1], got) {
			return nil
		}
	}
	return fmt.Errorf("sandgate answers `%s` with %d where the seed answers %d; docs/api.md, %q, has no row that says so", endpoint, got, seed, DifferencesHeading)
}

func names(cell string, status int) bool {
	return slices.Contains(code.FindAllString(cell, -1), strconv.Itoa(status))
}
