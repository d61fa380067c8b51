package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// referenceNames are the environment names the reference design
// (shared/seed/architecture.md) uses, each of which docs/configuration.md
// must account for: supported, replaced (and by what) or not a setting.
var referenceNames = []string{
	"AGENT_SANDBOX_VERSION", "ALLOW_INSECURE_COOKIES", "AUTH_PROXY_HEADER", "AUTH_RATE_LIMIT", "AUTH_RATE_WINDOW",
	"CLIENT_CLOSED_REQUEST", "COOKIE_MAX_AGE", "COOKIE_NAME", "COOKIE_SECURE", "DSH_HOME", "DSH_LAUNCH_TOKEN",
	"DSH_LOG_TAIL_LINES", "DSH_PERMISSION_MODE", "DSH_TRUSTED_HOSTS", "IDLE_TIMEOUT", "MAX_BODY_MB",
	"MAX_IN_FLIGHT_PER_USER", "MISSING_CREDENTIAL", "SIGNUP_INVITE_CODE", "UPSTREAM_HEADER_ALLOWLIST",
	"WAKE_TIMEOUT", "WS_MAX_MESSAGE_BYTES",
}

// binaries are the servers whose --help the docs are checked against,
// by the name docs/configuration.md gives them.
var binaries = map[string]string{"auth API": "authapi", "node proxy": "nodeproxy"}

// configRow is one row of a table in docs/configuration.md.
type configRow struct{ name, where, defaults string }

var (
	tableRow = regexp.MustCompile("^\\| `([A-Z][A-Z0-9_]*)` \\|([^|]*)\\|([^|]*)\\|$")
	envName  = regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
)

func configRows(t *testing.T) []configRow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []configRow
	for _, line := range strings.Split(string(data), "\n") {
		if m := tableRow.FindStringSubmatch(line); m != nil {
			rows = append(rows, configRow{m[1], strings.TrimSpace(m[2]), strings.TrimSpace(m[3])})
		}
	}
	return rows
}

// TestReferenceSettings: every name the reference design uses has a row
// in docs/configuration.md, and the row is true: a setting of the binaries
// it names (their --help lists it), an entry of the sandbox template or of
// versions.env, or replaced by settings that exist, or not a setting with
// a reason.
func TestReferenceSettings(t *testing.T) {
	if ref, err := os.ReadFile(filepath.Join(root, "..", "shared", "seed", "architecture.md")); err == nil {
		for _, n := range slices.Compact(slices.Sorted(slices.Values(regexp.MustCompile(`\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b`).FindAllString(string(ref), -1)))) {
			if !slices.Contains(referenceNames, n) {
				t.Errorf("the reference design names %s: add it to referenceNames and docs/configuration.md", n)
			}
		}
	}
	help := map[string]map[string]string{}
	supported := map[string]bool{}
	for _, bin := range binaries {
		help[bin] = helpDefaults(t, bin)
		for n := range help[bin] {
			supported[n] = true
		}
	}
	template := readAll(t, filepath.Join(root, "manifests", "sandbox"))
	versions := readVersions(t)
	rows := map[string]configRow{}
	for _, r := range configRows(t) {
		rows[r.name] = r
	}
	for _, n := range referenceNames {
		r, ok := rows[n]
		if !ok {
			t.Errorf("docs/configuration.md has no row for the reference design's %s", n)
			continue
		}
		switch {
		case strings.HasPrefix(r.where, "replaced by "):
			by := envName.FindAllStringSubmatch(r.where, -1)
			if len(by) == 0 {
				t.Errorf("%s: replaced by what? %q names no setting", n, r.where)
			}
			for _, m := range by {
				if !supported[m[1]] {
					t.Errorf("%s is replaced by %s, which no binary reads", n, m[1])
				}
			}
		case strings.HasPrefix(r.where, "not a setting: "):
		case strings.HasPrefix(r.where, "sandbox template"):
			if !strings.Contains(template, n) {
				t.Errorf("%s: manifests/sandbox does not set it", n)
			}
		case r.where == "`versions.env`":
			if versions[n] == "" {
				t.Errorf("%s: versions.env does not pin it", n)
			}
		default:
			bins := rowBinaries(t, r)
			for _, bin := range bins {
				if _, ok := help[bin][n]; !ok {
					t.Errorf("%s: docs/configuration.md says %s reads it; its --help does not list it", n, bin)
				}
			}
		}
	}
}

// rowBinaries are the binaries a setting row names ("auth API, node
// proxy").
func rowBinaries(t *testing.T, r configRow) []string {
	t.Helper()
	var bins []string
	for _, part := range strings.Split(r.where, ",") {
		bin, ok := binaries[strings.TrimSpace(part)]
		if !ok {
			t.Errorf("%s: %q is not a binary, `versions.env`, sandbox template, replaced by or not a setting", r.name, part)
			continue
		}
		bins = append(bins, bin)
	}
	return bins
}

// TestDocumentedDefaults: every value the README or a page of docs/ writes
// in parentheses after a setting's name (inlineValues) is the binary's
// default; TestSettingTables checks the tables.
func TestDocumentedDefaults(t *testing.T) {
	help := map[string]map[string]string{}
	for _, bin := range binaries {
		help[bin] = helpDefaults(t, bin)
	}
	checked := 0
	for name, text := range pages(t) {
		for _, m := range inlineValues.FindAllStringSubmatch(strings.Join(strings.Fields(text), " "), -1) {
			values, ok := inlineList(m[2])
			if !ok {
				continue
			}
			for _, v := range values {
				var defaults []string
				for label, bin := range binaries {
					if d, ok := help[bin][m[1]]; ok && (v.bin == "" || v.bin == label) {
						defaults = append(defaults, d)
					}
				}
				if len(defaults) == 0 {
					continue
				}
				checked++
				if !slices.ContainsFunc(defaults, func(d string) bool { return sameValue(v.value, d) }) {
					t.Errorf("%s: %s (%s), but the binaries default to %q", name, m[1], m[2], defaults)
				}
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d documented defaults found in the pages: is the pattern broken?", checked)
	}
}

// inlineValues is a setting followed by a parenthesis, such as "`NAME`
// (30)", "(60 s)", "(default `x`)", "(`/a/path`)", "(default **10**)" or
// "(auth API 10 s, node proxy 15 s)"; inlineList tells values from prose.
var (
	inlineValues = regexp.MustCompile("`([A-Z][A-Z0-9_]*)` \\(([^()]*)\\)")
	inlineValue  = regexp.MustCompile("^(?:(auth API|node proxy) )?(?:default (`[^`]+`)|(`/[^`]*`)|(?:default )?\\**([0-9][0-9.]*(?: ?[a-zA-Z]+)?)\\**)$")
)

// inlineDefault is one value of a parenthesis, for one binary or ("") any.
type inlineDefault struct{ bin, value string }

// inlineList reads a parenthesis of values separated by ", "; ok is false
// when any part is prose, or a list holds paths (a list of paths is not one
// setting's default).
func inlineList(s string) ([]inlineDefault, bool) {
	var out []inlineDefault
	parts := strings.Split(s, ", ")
	for _, part := range parts {
		m := inlineValue.FindStringSubmatch(part)
		if m == nil || (m[3] != "" && len(parts) > 1) {
			return nil, false
		}
		out = append(out, inlineDefault{m[1], m[2] + m[3] + m[4]})
	}
	return out, true
}

// sameValue compares a value as docs write it ("30", "60 s", "7 days",
// "16 MiB", "`/var/log/pods`") with a --help default ("30", "1m0s",
// "168h0m0s", "16777216").
func sameValue(doc, def string) bool {
	doc = strings.Trim(doc, "`")
	if doc == def {
		return true
	}
	i := strings.IndexFunc(doc, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	if i <= 0 {
		return false
	}
	unit := strings.TrimSpace(doc[i:])
	n, err := strconv.ParseFloat(doc[:i], 64)
	if err != nil {
		return false
	}
	if size, err := strconv.ParseInt(def, 10, 64); err == nil {
		sizes := map[string]float64{"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
		u, ok := sizes[unit]
		return ok && int64(n*u) == size
	}
	want, err := time.ParseDuration(def)
	if err != nil {
		return false
	}
	units := map[string]time.Duration{
		"ms": time.Millisecond, "s": time.Second, "second": time.Second, "seconds": time.Second,
		"min": time.Minute, "minute": time.Minute, "minutes": time.Minute, "m": time.Minute,
		"h": time.Hour, "hour": time.Hour, "hours": time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	}
	u, ok := units[unit]
	return ok && time.Duration(n*float64(u)) == want
}

// readAll concatenates the files under dir.
func readAll(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		b.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
