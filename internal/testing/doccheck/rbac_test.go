package doccheck

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// rbacKey is one resource an RBAC table row or a manifest rule grants
// something on: the ServiceAccount, the scope (a namespace or "cluster"),
// the resource as name.group (the bare name for the core group) and the
// resourceNames, sorted and joined ("" for any name).
type rbacKey struct{ sa, scope, resource, names string }

func (k rbacKey) String() string {
	names := k.names
	if names == "" {
		names = "any"
	}
	return fmt.Sprintf("%s in %s: %s (names %s)", k.sa, k.scope, k.resource, names)
}

// rbacGrants maps what is granted on to its verbs, sorted.
type rbacGrants map[rbacKey][]string

// add merges verbs into the grants of k.
func (g rbacGrants) add(k rbacKey, verbs ...string) {
	v := append(g[k], verbs...)
	slices.Sort(v)
	g[k] = slices.Compact(v)
}

// shippedRBAC reads the Roles, ClusterRoles and their bindings of
// manifests/*/rbac.yaml: what each bound ServiceAccount may do. A Role
// without a namespace takes its kustomization's.
func shippedRBAC(t *testing.T) rbacGrants {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "manifests", "*", "rbac.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests/*/rbac.yaml: %v", err)
	}
	kustNamespace := regexp.MustCompile(`(?m)^namespace: (\S+)`)
	grants := rbacGrants{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		defaultNS := ""
		if k, err := os.ReadFile(filepath.Join(filepath.Dir(file), "kustomization.yaml")); err == nil {
			if m := kustNamespace.FindSubmatch(k); m != nil {
				defaultNS = string(m[1])
			}
		}
		roles := map[string][]rbacv1.PolicyRule{} // "Kind/namespace/name"
		var bindings []rbacv1.RoleBinding         // a ClusterRoleBinding has the same fields
		var kinds []string
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Namespace string `json:"namespace"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			ns := head.Metadata.Namespace
			if ns == "" {
				ns = defaultNS
			}
			switch head.Kind {
			case "Role", "ClusterRole":
				var r rbacv1.ClusterRole // a Role has the same fields
				if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				if head.Kind == "ClusterRole" {
					ns = ""
				}
				roles[head.Kind+"/"+ns+"/"+r.Name] = r.Rules
			case "RoleBinding", "ClusterRoleBinding":
				var b rbacv1.RoleBinding
				if err := yaml.Unmarshal([]byte(doc), &b); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				b.Namespace = ns
				bindings = append(bindings, b)
				kinds = append(kinds, head.Kind)
			}
		}
		for i, b := range bindings {
			scope, roleNS := b.Namespace, b.Namespace
			if kinds[i] == "ClusterRoleBinding" {
				scope, roleNS = "cluster", ""
			}
			if b.RoleRef.Kind == "ClusterRole" {
				roleNS = ""
			}
			rules, ok := roles[b.RoleRef.Kind+"/"+roleNS+"/"+b.RoleRef.Name]
			if !ok {
				t.Fatalf("%s: %s %s binds %s %s, which the file does not hold", file, kinds[i], b.Name, b.RoleRef.Kind, b.RoleRef.Name)
			}
			for _, s := range b.Subjects {
				if s.Kind != "ServiceAccount" {
					continue
				}
				for _, r := range rules {
					names := slices.Sorted(slices.Values(r.ResourceNames))
					for _, g := range r.APIGroups {
						for _, res := range r.Resources {
							if g != "" {
								res += "." + g
							}
							grants.add(rbacKey{s.Name, scope, res, strings.Join(names, ",")}, r.Verbs...)
						}
					}
				}
			}
		}
	}
	return grants
}

// rbacHeader is the header of an RBAC table.
var rbacHeader = []string{"serviceaccount", "scope", "resource", "names", "verbs"}

var backticked = regexp.MustCompile("`([^`]+)`")

// rbacTables reads the RBAC tables of a page (a header starting
// "ServiceAccount | scope | resource | names | verbs"): one row per
// resource and names, cells in backticks, "cluster" for a cluster-wide
// scope and "any" for no resourceNames.
func rbacTables(t *testing.T, page, text string) rbacGrants {
	t.Helper()
	grants := rbacGrants{}
	inTable := false
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := tableCells(line)
		lower := make([]string, len(cells))
		for i, c := range cells {
			lower[i] = strings.ToLower(c)
		}
		switch {
		case len(lower) >= len(rbacHeader) && slices.Equal(lower[:len(rbacHeader)], rbacHeader):
			inTable = true
		case !inTable || strings.HasPrefix(line, "|---"):
		default:
			one := func(i int) string {
				if cells[i] == "any" || cells[i] == "cluster" {
					return cells[i]
				}
				m := backticked.FindAllStringSubmatch(cells[i], -1)
				if len(m) != 1 {
					t.Errorf("%s: RBAC row %q: column %s is not one `value`", page, line, rbacHeader[i])
					return ""
				}
				return m[0][1]
			}
			k := rbacKey{sa: one(0), scope: one(1), resource: one(2), names: one(3)}
			if k.names == "any" {
				k.names = ""
			}
			var verbs []string
			for _, m := range backticked.FindAllStringSubmatch(cells[4], -1) {
				verbs = append(verbs, m[1])
			}
			if _, dup := grants[k]; dup {
				t.Errorf("%s: two RBAC rows for %s", page, k)
			}
			grants.add(k, verbs...)
		}
	}
	return grants
}

// TestRBACTables: a page's RBAC table for a ServiceAccount lists exactly
// what manifests/*/rbac.yaml grants it (resources, resourceNames, verbs,
// namespace or cluster scope), and every ServiceAccount those files bind
// has such a table somewhere.
func TestRBACTables(t *testing.T) {
	shipped := shippedRBAC(t)
	if len(shipped) < 5 {
		t.Fatalf("only %d grants read from manifests/*/rbac.yaml: is the reading broken? %v", len(shipped), shipped)
	}
	documented := map[string]bool{}
	for page, text := range pages(t) {
		doc := rbacTables(t, page, text)
		accounts := map[string]bool{}
		for k := range doc {
			accounts[k.sa] = true
		}
		for sa := range accounts {
			documented[sa] = true
			for k, verbs := range doc {
				if k.sa != sa {
					continue
				}
				if want, ok := shipped[k]; !ok {
					t.Errorf("%s: RBAC table grants %s verbs %v; manifests/*/rbac.yaml grant nothing there", page, k, verbs)
				} else if !slices.Equal(verbs, want) {
					t.Errorf("%s: RBAC table grants %s verbs %v; manifests/*/rbac.yaml grant %v", page, k, verbs, want)
				}
			}
			for k, want := range shipped {
				if _, ok := doc[k]; k.sa == sa && !ok {
					t.Errorf("%s: the RBAC table of %s has no row for %s (verbs %v in manifests/*/rbac.yaml)", page, sa, k, want)
				}
			}
		}
	}
	for k := range shipped {
		if !documented[k.sa] {
			t.Errorf("no page has an RBAC table for ServiceAccount %s, which manifests/*/rbac.yaml bind (%v)", k.sa, slices.Sorted(maps.Keys(documented)))
			documented[k.sa] = true // once
		}
	}
}
