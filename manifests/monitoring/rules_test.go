package monitoring_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// promRule is the part of the PrometheusRule the checks read.
type promRule struct {
	Kind string `json:"kind"`
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// readRule reads prometheusrule.yaml, keeping its spec as written for
// promtool.
func readRule(t *testing.T) (promRule, json.RawMessage) {
	t.Helper()
	f, err := os.Open("prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var raw struct {
		Spec json.RawMessage `json:"spec"`
	}
	var doc json.RawMessage
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&doc); err != nil {
		t.Fatalf("decode prometheusrule.yaml: %v", err)
	}
	var rule promRule
	if err := json.Unmarshal(doc, &rule); err != nil {
		t.Fatalf("decode prometheusrule.yaml: %v", err)
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		t.Fatalf("decode prometheusrule.yaml: %v", err)
	}
	if rule.Kind != "PrometheusRule" || len(rule.Spec.Groups) == 0 {
		t.Fatalf("prometheusrule.yaml holds a %q with %d groups, want a PrometheusRule with groups", rule.Kind, len(rule.Spec.Groups))
	}
	return rule, raw.Spec
}

// TestRulesPassPromtool checks the PrometheusRule's spec as a Prometheus
// rules file and runs rules_test.yaml, which fires and clears every alert.
func TestRulesPassPromtool(t *testing.T) {
	bin := testkit.MakeBinary(t, "PROMTOOL", "promtool")
	_, spec := readRule(t)
	dir := t.TempDir()
	// JSON is YAML: promtool reads the spec as written.
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"check", "rules", "--lint=all", "--lint-fatal", "rules.yaml"},
		{"test", "rules", "rules_test.yaml"},
	} {
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out.String())
		}
	}
}

// TestEveryAlertIsTested keeps rules_test.yaml complete: each alert has a
// case where it fires and one where it does not.
func TestEveryAlertIsTested(t *testing.T) {
	rule, _ := readRule(t)
	f, err := os.Open("rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var suite struct {
		Tests []struct {
			AlertRuleTests []struct {
				Alertname string            `json:"alertname"`
				ExpAlerts []json.RawMessage `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&suite); err != nil {
		t.Fatalf("decode rules_test.yaml: %v", err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range suite.Tests {
		for _, at := range tc.AlertRuleTests {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			} else {
				quiet[at.Alertname] = true
			}
		}
	}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if !fires[r.Alert] {
				t.Errorf("rules_test.yaml has no case where %s fires", r.Alert)
			}
			if !quiet[r.Alert] {
				t.Errorf("rules_test.yaml has no case where %s stays quiet", r.Alert)
			}
		}
	}
}
