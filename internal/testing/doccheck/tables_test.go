package doccheck

import (
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// settingsTable is a Markdown table of settings: names in the first column,
// a "default" column, and maybe a column naming the binary that reads them.
type settingsTable struct {
	page                string
	defaults, component int // column indexes; component is -1 when absent
	rows                [][]string
}

// settingsTables finds every table of a page whose header has a default
// column.
func settingsTables(page, text string) []settingsTable {
	var tables []settingsTable
	var cur *settingsTable
	var header []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") {
			cur, header = nil, nil
			continue
		}
		cells := tableCells(line)
		switch {
		case header == nil:
			header = cells
		case cur == nil && strings.HasPrefix(line, "|---"):
			t := settingsTable{page: page, defaults: -1, component: -1}
			for i, h := range header {
				switch strings.ToLower(h) {
				case "default":
					t.defaults = i
				case "component", "in sandgate":
					t.component = i
				}
			}
			if t.defaults < 0 {
				header = []string{}
				continue
			}
			tables = append(tables, t)
			cur = &tables[len(tables)-1]
		case cur != nil:
			cur.rows = append(cur.rows, cells)
		}
	}
	return tables
}

// tableCells splits a table row at the pipes outside backticks (an escaped
// "\|" stays in its cell).
func tableCells(line string) []string {
	var cells []string
	var b strings.Builder
	code := false
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '`':
			code = !code
			b.WriteByte(c)
		case c == '\\' && i+1 < len(line) && line[i+1] == '|':
			b.WriteByte('|')
			i++
		case c == '|' && !code:
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(cells, strings.TrimSpace(b.String()))
}

// splitTop splits a cell at ", " outside parentheses and backticks.
func splitTop(cell string) []string {
	var parts []string
	depth, code, start := 0, false, 0
	for i := 0; i < len(cell); i++ {
		switch cell[i] {
		case '`':
			code = !code
		case '(':
			if !code {
				depth++
			}
		case ')':
			if !code {
				depth--
			}
		case ',':
			if !code && depth == 0 && i+1 < len(cell) && cell[i+1] == ' ' {
				parts = append(parts, strings.TrimSpace(cell[start:i]))
				start = i + 1
			}
		}
	}
	return append(parts, strings.TrimSpace(cell[start:]))
}

var (
	nameCell      = regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
	manifestsNote = regexp.MustCompile("\\(manifests: `([^`]+)`[^()]*\\)|manifests: `([^`]+)`")
	note          = regexp.MustCompile(`\(([^()]*)\)`)
	quotedValue   = regexp.MustCompile("`([^`]+)`(?: \\((auth API|node proxy)\\))?")
)

// TestSettingTables: in every table of settings in the README and docs/
// (a first column of `NAME`s and a "default" column), each name is read by
// the binaries the row names, and each default is theirs. A row of several
// names gives one default per name, separated by ", " (commas inside
// parentheses or backticks do not count), and may give one component per
// name the same way. A default is a `value` (qualified "(auth API)" or
// "(node proxy)" when the binaries differ), a number with a unit ("7 days",
// "16 MiB"), "empty" or "unset" (no default; backticked words after it must
// appear in the setting's help), or prose, which is not checked; a note
// "(manifests: `value`)" must be what manifests/ sets.
func TestSettingTables(t *testing.T) {
	help := map[string]map[string]helpSetting{}
	for _, bin := range binaries {
		help[bin] = helpSettings(t, bin)
	}
	shipped := readAll(t, filepath.Join(root, "manifests"))
	checked := 0
	for name, text := range pages(t) {
		for _, table := range settingsTables(name, text) {
			for _, row := range table.rows {
				checked += checkSettingRow(t, table, row, help, shipped)
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d defaults checked in the settings tables: is the table layout still the one this test reads?", checked)
	}
}

func checkSettingRow(t *testing.T, table settingsTable, row []string, help map[string]map[string]helpSetting, shipped string) int {
	t.Helper()
	if len(row) <= table.defaults {
		t.Errorf("%s: row %q has no default column", table.page, row)
		return 0
	}
	var names []string
	for _, m := range nameCell.FindAllStringSubmatch(row[0], -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		return 0
	}
	var components []string
	if table.component >= 0 {
		where := row[table.component]
		if strings.HasPrefix(where, "replaced by ") || strings.HasPrefix(where, "not a setting") ||
			strings.HasPrefix(where, "sandbox template") || where == "`versions.env`" {
			return 0
		}
		components = splitTop(where)
	}
	items := splitTop(row[table.defaults])
	if len(names) > 1 && len(items) != len(names) {
		t.Errorf("%s: the row of %s gives %d defaults %q, want one per name", table.page, strings.Join(names, ", "), len(items), items)
		return 0
	}
	if len(names) == 1 {
		items = []string{row[table.defaults]}
	}
	checked := 0
	for i, name := range names {
		bins := rowBins(t, table.page, name, i, len(names), components, help)
		if len(bins) == 0 {
			continue
		}
		checked++
		checkDefault(t, table.page, name, items[i], bins, help, shipped)
	}
	return checked
}

// rowBins returns the binaries that read the i-th of n names of a row:
// those its component column names (one for all, or one per name), else
// every binary whose --help lists it; a named binary that does not list it
// is an error, and left out.
func rowBins(t *testing.T, page, name string, i, n int, components []string, help map[string]map[string]helpSetting) []string {
	t.Helper()
	var parts []string
	switch {
	case components == nil:
		for _, bin := range slices.Sorted(maps.Keys(help)) {
			if _, ok := help[bin][name]; ok {
				parts = append(parts, bin)
			}
		}
		if parts == nil {
			t.Errorf("%s: %s is in a settings table, but neither binary's --help lists it", page, name)
		}
		return parts
	case len(components) == n && n > 1:
		parts = []string{components[i]}
	default:
		parts = components
	}
	var bins []string
	for _, p := range parts {
		switch p {
		case "both":
			bins = append(bins, "authapi", "nodeproxy")
		default:
			bin, ok := binaries[p]
			if !ok {
				t.Errorf("%s: %s: component %q is not \"both\", \"auth API\" or \"node proxy\"", page, name, p)
				continue
			}
			bins = append(bins, bin)
		}
	}
	var listed []string
	for _, bin := range bins {
		if _, ok := help[bin][name]; !ok {
			t.Errorf("%s: %s is said to be read by %s, whose --help does not list it", page, name, bin)
			continue
		}
		listed = append(listed, bin)
	}
	return listed
}

// checkDefault checks one documented default of name against the binaries
// that read it and, for a manifests note, against manifests/.
func checkDefault(t *testing.T, page, name, item string, bins []string, help map[string]map[string]helpSetting, shipped string) {
	t.Helper()
	for _, m := range manifestsNote.FindAllStringSubmatch(item, -1) {
		if v := m[1] + m[2]; !setsEnv(shipped, name, v) {
			t.Errorf("%s: %s: the manifests are said to set %q; manifests/ does not", page, name, v)
		}
	}
	item = strings.TrimSpace(manifestsNote.ReplaceAllString(item, ""))
	lower := strings.ToLower(item)
	switch {
	case item == "" || strings.HasPrefix(lower, "empty") || strings.HasPrefix(lower, "unset"):
		for _, bin := range bins {
			s := help[bin][name]
			if s.def != "" {
				t.Errorf("%s: %s has no default, says the page; %s's is %q", page, name, bin, s.def)
			}
			for _, m := range quotedValue.FindAllStringSubmatch(item, -1) {
				if !strings.Contains(s.help, m[1]) {
					t.Errorf("%s: %s: %q, says the page of its empty value; %s's help does not say so: %q", page, name, m[1], bin, s.help)
				}
			}
		}
	case strings.HasPrefix(item, "`"):
		values := note.ReplaceAllStringFunc(item, func(n string) string {
			if _, ok := binaries[strings.Trim(n, "()")]; ok {
				return n
			}
			return ""
		})
		for _, m := range quotedValue.FindAllStringSubmatch(values, -1) {
			for _, bin := range bins {
				if m[2] != "" && binaries[m[2]] != bin {
					continue
				}
				if def := help[bin][name].def; !sameValue(m[1], def) {
					t.Errorf("%s: %s defaults to %q, says the page; %s's default is %q", page, name, m[1], bin, def)
				}
			}
		}
	case item[0] >= '0' && item[0] <= '9':
		for _, bin := range bins {
			if def := help[bin][name].def; !sameValue(item, def) {
				t.Errorf("%s: %s defaults to %q, says the page; %s's default is %q", page, name, item, bin, def)
			}
		}
	}
}

// setsEnv reports whether the manifests give the environment variable name
// the value v, in an env file or a container's env list.
func setsEnv(manifests, name, v string) bool {
	q := regexp.QuoteMeta(v)
	return regexp.MustCompile(`(?m)^`+name+`=`+q+`$`).MatchString(manifests) ||
		regexp.MustCompile(`name: `+name+`, value: "?`+q+`"?\s*\}`).MatchString(manifests) ||
		regexp.MustCompile(`(?m)- name: `+name+`\n\s+value: "?`+q+`"?$`).MatchString(manifests)
}

var (
	manifestsPath = regexp.MustCompile("`manifests/[^`]*`")
	envAssignment = regexp.MustCompile("`([A-Z][A-Z0-9_]*)=([^`]*)`")
	paragraphs    = regexp.MustCompile(`\n[ \t]*\n`)
)

// TestManifestValues: a paragraph that names a file of manifests/ and
// writes a setting as `NAME=value` gives the value the manifests set.
func TestManifestValues(t *testing.T) {
	shipped := readAll(t, filepath.Join(root, "manifests"))
	checked := 0
	for name, text := range pages(t) {
		for _, para := range paragraphs.Split(text, -1) {
			if !manifestsPath.MatchString(para) {
				continue
			}
			for _, m := range envAssignment.FindAllStringSubmatch(para, -1) {
				checked++
				if !setsEnv(shipped, m[1], m[2]) {
					t.Errorf("%s: %s=%s beside a manifests/ path, but manifests/ does not set that", name, m[1], m[2])
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no NAME=value beside a manifests/ path found: is the pattern broken?")
	}
}
