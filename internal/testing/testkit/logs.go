package testkit

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// JSONLines parses every line of a JSON log (as slog's JSON handler writes
// it) and fails the test on a line that is not a JSON object.
func JSONLines(t testing.TB, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		out = append(out, line)
	}
	return out
}

// AuditLines is JSONLines keeping only the audit events (log=audit).
func AuditLines(t testing.TB, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range JSONLines(t, log) {
		if line["log"] == "audit" {
			out = append(out, line)
		}
	}
	return out
}
