package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// alertRule is what the alert table of docs/operations.md says of one alert.
type alertRule struct{ forDuration, severity string }

// shippedAlerts reads the alerts of the shipped PrometheusRule.
func shippedAlerts(t *testing.T) map[string]alertRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "manifests", "monitoring", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	alerts := map[string]alertRule{}
	blocks := regexp.MustCompile(`(?m)^\s*- alert: `).Split(string(data), -1)
	forLine := regexp.MustCompile(`(?m)^\s*for: (\S+)`)
	severity := regexp.MustCompile(`severity: (\w+)`)
	for _, b := range blocks[1:] {
		name, _, _ := strings.Cut(b, "\n")
		var r alertRule
		if m := forLine.FindStringSubmatch(b); m != nil {
			r.forDuration = m[1]
		}
		if m := severity.FindStringSubmatch(b); m != nil {
			r.severity = m[1]
		}
		alerts[strings.TrimSpace(name)] = r
	}
	return alerts
}

// TestAlertTable: docs/operations.md's table of alerts has a row for each alert of
// manifests/monitoring and no other; a row marked "(critical)" is the
// critical one, and a meaning that ends in "for <duration>" gives the
// rule's for.
func TestAlertTable(t *testing.T) {
	alerts := shippedAlerts(t)
	if len(alerts) == 0 {
		t.Fatal("no alert read from prometheusrule.yaml: is the reading broken?")
	}
	row := regexp.MustCompile("^\\| `(Sandgate[A-Za-z0-9]+)`( \\(critical\\))? \\| ([^|]*) \\|")
	endsFor := regexp.MustCompile(`\bfor (\d+[smh])$`)
	seen := map[string]bool{}
	for _, line := range strings.Split(pages(t)[operationsPage], "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, critical, means := m[1], m[2] != "", strings.TrimSpace(m[3])
		seen[name] = true
		r, ok := alerts[name]
		if !ok {
			t.Errorf("%s: alert %s is not in manifests/monitoring/prometheusrule.yaml", operationsPage, name)
			continue
		}
		if critical != (r.severity == "critical") {
			t.Errorf("%s: alert %s marked critical=%v; its severity is %q", operationsPage, name, critical, r.severity)
		}
		if f := endsFor.FindStringSubmatch(means); f != nil && f[1] != r.forDuration {
			t.Errorf("%s: alert %s fires after %s, says the table; the rule's for is %s", operationsPage, name, f[1], r.forDuration)
		}
	}
	for name := range alerts {
		if !seen[name] {
			t.Errorf("%s's alert table has no row for %s", operationsPage, name)
		}
	}
}
