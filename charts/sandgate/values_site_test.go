package sandgate_test

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// siteChange is one field a site value sets: the object (kind, namespace,
// name; a generated ConfigMap by its name before the hash), the path to the
// field and what it holds. A nil want asks only that the field is set.
type siteChange struct {
	kind, namespace, name string
	path                  []string
	want                  any
}

// checksum is the pod template's annotation that rolls a workload's pods.
var checksum = []string{"spec", "template", "metadata", "annotations", "sandgate.io/config-checksum"}

// siteCases set each site value, beside the exposure it is for, and list
// every field that changes with it.
var siteCases = []struct {
	name string
	set  []string
	want []siteChange
}{
	{"ingress host", []string{"exposure=ingress", "ingress.host=agents.example.org"}, []siteChange{
		{"Ingress", "sandgate-node", "sandgate", []string{"spec", "rules", "0", "host"}, "agents.example.org"},
		{"Ingress", "sandgate-node", "sandgate", []string{"spec", "tls", "0", "hosts"}, []any{"agents.example.org"}},
		{"ConfigMap", "sandgate", "sandgate-public", []string{"data", "DSH_TRUSTED_HOSTS"}, "agents.example.org"},
	}},
	{"public hosts beside the ingress host", []string{"exposure=ingress", "ingress.host=agents.example.org", "sandboxes.publicHosts=agents.example.org\\,ai.example.org"}, []siteChange{
		{"Ingress", "sandgate-node", "sandgate", []string{"spec", "rules", "0", "host"}, "agents.example.org"},
		{"Ingress", "sandgate-node", "sandgate", []string{"spec", "tls", "0", "hosts"}, []any{"agents.example.org"}},
		{"ConfigMap", "sandgate", "sandgate-public", []string{"data", "DSH_TRUSTED_HOSTS"}, "agents.example.org,ai.example.org"},
	}},
	{"sso host", []string{"exposure=sso", "ingress.host=agents.example.org"}, []siteChange{
		{"Ingress", "sandgate", "sandgate", []string{"spec", "rules", "0", "host"}, "agents.example.org"},
		{"Ingress", "sandgate", "sandgate", []string{"spec", "tls", "0", "hosts"}, []any{"agents.example.org"}},
		{"ConfigMap", "sandgate", "sandgate-public", []string{"data", "DSH_TRUSTED_HOSTS"}, "agents.example.org"},
	}},
	{"subdomain host", []string{"exposure=subdomain", "ingress.host=agents.example.org"}, []siteChange{
		{"Ingress", "sandgate-node", "sandgate", []string{"spec", "rules", "0", "host"}, "agents.example.org"},
		{"Ingress", "sandgate-node", "sandgate", []string{"spec", "tls", "0", "hosts"}, []any{"agents.example.org", "*.users.example.com"}},
		{"ConfigMap", "sandgate", "sandgate-public", []string{"data", "DSH_TRUSTED_HOSTS"}, "agents.example.org"},
		{"ConfigMap", "sandgate-node", "nodeproxy-config", []string{"data", "PUBLIC_ORIGIN"}, "https://agents.example.org"},
		{"DaemonSet", "sandgate-node", "nodeproxy", checksum, nil},
	}},
	{"subdomain user domain", []string{"exposure=subdomain", "ingress.userDomain=agents.example.net"}, []siteChange{
		{"Ingress", "sandgate-node", "sandgate", []string{"spec", "rules", "1", "host"}, "*.agents.example.net"},
		{"Ingress", "sandgate-node", "sandgate", []string{"spec", "tls", "0", "hosts"}, []any{"sandgate.example.com", "*.agents.example.net"}},
		{"ConfigMap", "sandgate", "authapi-config", []string{"data", "USER_DOMAIN"}, "agents.example.net"},
		{"ConfigMap", "sandgate-node", "nodeproxy-config", []string{"data", "USER_DOMAIN"}, "agents.example.net"},
		{"Deployment", "sandgate", "authapi", checksum, nil},
		{"DaemonSet", "sandgate-node", "nodeproxy", checksum, nil},
	}},
	{"sso provider", []string{"exposure=sso", "sso.issuerURL=https://login.example.org/realms/agents", "sso.allowedGroup=agent-users"}, []siteChange{
		{"Deployment", "sandgate", "oauth2-proxy", []string{"spec", "template", "spec", "containers", "0", "args", "1"}, "--oidc-issuer-url=https://login.example.org/realms/agents"},
		{"Deployment", "sandgate", "oauth2-proxy", []string{"spec", "template", "spec", "containers", "0", "args", "3"}, "--allowed-group=agent-users"},
	}},
	{"ingress controller namespace", []string{"exposure=ingress", "ingress.controllerNamespace=traefik"}, []siteChange{
		{"NetworkPolicy", "sandgate-node", "nodeproxy-from-ingress", []string{"spec", "ingress", "0", "from", "0", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"}, "traefik"},
	}},
	{"subdomain controller namespace", []string{"exposure=subdomain", "ingress.controllerNamespace=traefik"}, []siteChange{
		{"NetworkPolicy", "sandgate-node", "nodeproxy-from-ingress", []string{"spec", "ingress", "0", "from", "0", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"}, "traefik"},
	}},
	{"sso controller namespace", []string{"exposure=sso", "ingress.controllerNamespace=traefik"}, []siteChange{
		{"NetworkPolicy", "sandgate", "oauth2-proxy-from-ingress", []string{"spec", "ingress", "0", "from", "0", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"}, "traefik"},
	}},
	{"node CIDRs", []string{"exposure=hostnetwork", "hardening.enabled=true", "hostNetwork.nodeCIDRs={192.168.10.0/24,192.168.11.0/24}"}, []siteChange{
		{"NetworkPolicy", "sandgate", "sandboxes-from-nodes", []string{"spec", "ingress", "0", "from"}, nodeCIDRPeers},
		{"NetworkPolicy", "sandgate", "authapi-from-nodes", []string{"spec", "ingress", "0", "from"}, nodeCIDRPeers},
		{"NetworkPolicy", "sandgate", "sandboxes-egress-to-nodes", []string{"spec", "egress", "0", "to"}, nodeCIDRPeers},
	}},
	{"one auth API replica", []string{"authapi.replicas=1"}, []siteChange{
		{"Deployment", "sandgate", "authapi", []string{"spec", "replicas"}, float64(1)},
		{"PodDisruptionBudget", "sandgate", "authapi", []string{"spec", "minAvailable"}, float64(0)},
	}},
	{"three auth API replicas", []string{"authapi.replicas=3"}, []siteChange{
		{"Deployment", "sandgate", "authapi", []string{"spec", "replicas"}, float64(3)},
	}},
}

var nodeCIDRPeers = []any{
	map[string]any{"ipBlock": map[string]any{"cidr": "192.168.10.0/24"}},
	map[string]any{"ipBlock": map[string]any{"cidr": "192.168.11.0/24"}},
}

// TestChartSiteValuesApply: each site value changes the fields its case
// lists, and no other object than theirs, compared with the same exposure
// at the defaults.
func TestChartSiteValuesApply(t *testing.T) {
	helm := helmPath(t)
	for _, tc := range siteCases {
		t.Run(tc.name, func(t *testing.T) {
			var defaults []string
			for _, s := range tc.set {
				if strings.HasPrefix(s, "exposure=") || strings.HasPrefix(s, "hardening.") {
					defaults = append(defaults, s)
				}
			}
			before := map[string]*unstructured.Unstructured{}
			for _, o := range helmTemplate(t, helm, defaults...) {
				before[key(o)] = o
			}
			after := helmTemplate(t, helm, tc.set...)
			changed := map[string]bool{}
			for _, o := range after {
				if b, ok := before[key(o)]; !ok || normalised(t, b) != normalised(t, o) {
					changed[key(o)] = true
				}
			}
			if len(after) != len(before) {
				t.Errorf("%d objects, want %d as with the defaults", len(after), len(before))
			}
			expected := map[string]bool{}
			for _, c := range tc.want {
				o := siteObject(after, c)
				if o == nil {
					t.Errorf("no %s %s/%s", c.kind, c.namespace, c.name)
					continue
				}
				expected[key(o)] = true
				switch got := field(o.Object, c.path); {
				case c.want == nil && got == nil:
					t.Errorf("%s %s %s is not set", c.kind, c.name, strings.Join(c.path, "."))
				case c.want != nil && !reflect.DeepEqual(got, c.want):
					t.Errorf("%s %s %s = %v, want %v", c.kind, c.name, strings.Join(c.path, "."), got, c.want)
				}
			}
			for k := range changed {
				if !expected[k] {
					t.Errorf("%s changed too", k)
				}
			}
			for k := range expected {
				if !changed[k] {
					t.Errorf("%s is as with the defaults", k)
				}
			}
		})
	}
}

func siteObject(objs []*unstructured.Unstructured, c siteChange) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == c.kind && o.GetNamespace() == c.namespace && (o.GetName() == c.name || strings.HasPrefix(o.GetName(), c.name+"-")) {
			return o
		}
	}
	return nil
}

// TestChartRefusesUnsafeSiteValues: values that would open a
// NetworkPolicy, let everyone in through SSO, or make the settings disagree
// with the Ingress's hosts fail the rendering, naming the value to set.
func TestChartRefusesUnsafeSiteValues(t *testing.T) {
	helm := helmPath(t)
	for _, tt := range []struct {
		set  []string
		want string
	}{
		{[]string{"exposure=hostnetwork", "hostNetwork.nodeCIDRs=null"}, "hostNetwork.nodeCIDRs is empty"},
		{[]string{"exposure=hostnetwork", "hostNetwork.nodeCIDRs={}"}, "hostNetwork.nodeCIDRs holds an empty CIDR"},
		{[]string{"exposure=sso", "sso.allowedGroup="}, "sso.allowedGroup"},
		{[]string{"exposure=sso", "sso.issuerURL="}, "sso.issuerURL"},
		{[]string{"exposure=subdomain", "authapi.config.USER_DOMAIN=agents.example.net"}, "set ingress.userDomain"},
		{[]string{"exposure=subdomain", "nodeproxy.config.PUBLIC_ORIGIN=https://agents.example.org"}, "set ingress.host"},
		{[]string{"exposure=subdomain", "ingress.host=alice.users.example.com"}, `ingress.host "alice.users.example.com" is one label under ingress.userDomain`},
	} {
		args := []string{"template", "sandgate", "."}
		for _, s := range tt.set {
			args = append(args, "--set", s)
		}
		out, err := exec.Command(helm, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tt.want) {
			t.Errorf("helm template --set %s: %v, want a failure naming %q:\n%.500s", strings.Join(tt.set, " --set "), err, tt.want, out)
		}
	}
}
