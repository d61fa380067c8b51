package manifests_test

import (
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/sandgate/sandgate/internal/settings"
)

// restrictingFlags are oauth2-proxy v7 flags that narrow who may sign in
// beyond "has an account at the provider".
var restrictingFlags = []string{"github-org", "github-team", "github-repo", "github-user", "allowed-group", "gitlab-group", "google-group"}

// admitsAnyAccount reports whether oauth2-proxy with args lets every
// account of its provider in: any e-mail domain and no organisation,
// team, repository, user or group rule.
func admitsAnyAccount(args []string) bool {
	anyDomain, restricted := false, false
	for _, a := range args {
		name, value, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case name == "email-domain" && value == "*":
			anyDomain = true
		case value != "" && slices.Contains(restrictingFlags, name):
			restricted = true
		}
	}
	return anyDomain && !restricted
}

func TestAdmitsAnyAccount(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"--provider=github", "--email-domain=*"}, true},
		{[]string{"--provider=github", "--email-domain=*", "--github-org="}, true},
		{[]string{"--provider=github", "--email-domain=*", "--github-org=acme"}, false},
		{[]string{"--provider=github", "--email-domain=*", "--github-org=acme", "--github-team=dev"}, false},
		{[]string{"--provider=oidc", "--email-domain=*", "--allowed-group=sandgate-users"}, false},
		{[]string{"--provider=github", "--email-domain=example.com"}, false},
	} {
		if got := admitsAnyAccount(tt.args); got != tt.want {
			t.Errorf("admitsAnyAccount(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// TestSSOVariantAdmitsOnlyItsOrganisation: the shipped SSO variant does
// not let every account of its provider in (--email-domain=* alone did:
// it needs its group), and the
// header the auth API takes the user from is the one oauth2-proxy sets on
// every request it forwards.
func TestSSOVariantAdmitsOnlyItsOrganisation(t *testing.T) {
	objs := build(t, "exposure/sso")
	proxy := decodeKind[appsv1.Deployment](t, objs, "Deployment", "oauth2-proxy")
	var c *corev1.Container
	for i := range proxy.Spec.Template.Spec.Containers {
		if strings.Contains(proxy.Spec.Template.Spec.Containers[i].Image, "oauth2-proxy") {
			c = &proxy.Spec.Template.Spec.Containers[i]
		}
	}
	if c == nil {
		t.Fatal("no oauth2-proxy container")
	}
	args := append(append([]string(nil), c.Command...), c.Args...)
	if admitsAnyAccount(args) {
		t.Errorf("oauth2-proxy admits every account of its provider: %q", args)
	}
	if !slices.Contains(args, "--provider=oidc") || slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--user-id-claim") || strings.HasPrefix(a, "--oidc-email-claim") || a == "--prefer-email-to-user=true" || a == "--prefer-email-to-user"
	}) {
		t.Errorf("X-Forwarded-User is not the OIDC subject (--provider=oidc, no claim or e-mail overrides): %q", args)
	}
	if want := toolsVersion(t, "../tools/oauth2proxy/go.mod", "github.com/oauth2-proxy/oauth2-proxy/v7"); !strings.HasSuffix(c.Image, ":"+want) {
		t.Errorf("oauth2-proxy image %s, want %s, the version tools/oauth2proxy builds and internal/testing/ssojourney runs", c.Image, want)
	}
	if !slices.Contains(args, "--pass-user-headers=true") {
		t.Errorf("oauth2-proxy does not set X-Forwarded-User on the requests it forwards: %q", args)
	}
	auth := decodeKind[appsv1.Deployment](t, objs, "Deployment", "authapi")
	if got := containerSettings(&auth.Spec.Template.Spec.Containers[0], objs)["AUTH_PROXY_HEADER"]; got != "X-Forwarded-User" {
		t.Errorf("the auth API takes the user from %q, want X-Forwarded-User, which oauth2-proxy sets", got)
	}
	for _, ds := range nodeproxyDaemonSets(t, objs) {
		if got := containerSettings(nodeproxyContainer(ds), objs)["AUTH_PROXY_HEADER"]; got != "X-Forwarded-User" {
			t.Errorf("the node proxies know the SSO header as %q, want the auth API's X-Forwarded-User", got)
		}
	}
}

// TestSSOHostNetworkCannotAssertUser: in the SSO variant a node proxy
// keeps X-Forwarded-User only from a peer in its TRUSTED_PROXIES, and no
// node address is one: a host-network process (on make cluster's node
// network, or a cloud's node subnet inside 10.0.0.0/8, which the variant
// used to trust whole) that reaches a node proxy, as it does once the node
// CIDR is admitted for masqueraded hops, has its X-Forwarded-User: alice
// stripped (finding 5 of issue 45). Hops from node addresses count by
// their HMAC proof, so the variant must ship a hop key.
func TestSSOHostNetworkCannotAssertUser(t *testing.T) {
	hostNetwork := []netip.Addr{
		netip.MustParseAddr("10.200.0.3"), // make cluster's node network
		netip.MustParseAddr("10.128.0.2"), // a GCE default node subnet
		netip.MustParseAddr("10.0.1.10"),  // a typical cloud VPC's node subnet
		netip.MustParseAddr("10.240.0.4"), // AKS's default node subnet
	}
	objs := build(t, "exposure/sso")
	for _, ds := range nodeproxyDaemonSets(t, objs) {
		env := containerSettings(nodeproxyContainer(ds), objs)
		if env["AUTH_PROXY_HEADER"] != "X-Forwarded-User" || env["HOP_KEY_FILE"] == "" {
			t.Errorf("DaemonSet %s: AUTH_PROXY_HEADER %q, HOP_KEY_FILE %q: want X-Forwarded-User stripped from untrusted peers and hops proven by the hop key", ds.Name, env["AUTH_PROXY_HEADER"], env["HOP_KEY_FILE"])
		}
		trusted, err := settings.Prefixes("TRUSTED_PROXIES", env["TRUSTED_PROXIES"])
		if err != nil || len(trusted) == 0 {
			t.Fatalf("DaemonSet %s: TRUSTED_PROXIES %q: %v; oauth2-proxy's X-Forwarded-User would be stripped too", ds.Name, env["TRUSTED_PROXIES"], err)
		}
		for _, a := range hostNetwork {
			for _, p := range trusted {
				if p.Contains(a) {
					t.Errorf("DaemonSet %s trusts %s (TRUSTED_PROXIES %s): a host-network process there is believed when it sends X-Forwarded-User: alice", ds.Name, a, p)
				}
			}
		}
	}
}

// toolsVersion is module's version in a tools module's go.mod.
func toolsVersion(t *testing.T, gomod, module string) string {
	t.Helper()
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require ")); len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	t.Fatalf("%s does not require %s", gomod, module)
	return ""
}

// TestSSOProvesIdentity: in the SSO variant oauth2-proxy proves every
// request (--pass-basic-auth, its password from a Secret key, the user it
// puts in X-Forwarded-User, not the e-mail) and every node proxy reads the
// same Secret key as AUTH_PROXY_SECRET_FILE, so X-Forwarded-User is kept
// by that proof, not by the peer's address (finding 5 of issue 45).
func TestSSOProvesIdentity(t *testing.T) {
	objs := build(t, "exposure/sso")
	type ref struct{ secret, key string }
	var proxy *ref
	for _, d := range decodeAll[appsv1.Deployment](t, objs, "Deployment", "", "oauth2-proxy") {
		c := d.Spec.Template.Spec.Containers[0]
		if !slices.Contains(c.Args, "--pass-basic-auth=true") || slices.Contains(c.Args, "--prefer-email-to-user=true") {
			t.Errorf("oauth2-proxy args %q: want --pass-basic-auth=true and the user, not the e-mail, in its proof", c.Args)
		}
		for _, e := range c.Env {
			if e.Name == "OAUTH2_PROXY_BASIC_AUTH_PASSWORD" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				proxy = &ref{e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key}
			}
		}
	}
	if proxy == nil {
		t.Fatal("oauth2-proxy takes OAUTH2_PROXY_BASIC_AUTH_PASSWORD from no Secret: it proves nothing")
	}
	dss := nodeproxyDaemonSets(t, objs)
	if len(dss) == 0 {
		t.Fatal("no node proxy DaemonSet")
	}
	for _, ds := range dss {
		c := nodeproxyContainer(ds)
		file := containerSettings(c, objs)["AUTH_PROXY_SECRET_FILE"]
		if file == "" {
			t.Errorf("DaemonSet %s sets no AUTH_PROXY_SECRET_FILE: X-Forwarded-User would be trusted by address", ds.Name)
			continue
		}
		var got *ref
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/") {
				for _, v := range ds.Spec.Template.Spec.Volumes {
					if v.Name == m.Name && v.Secret != nil {
						got = &ref{v.Secret.SecretName, strings.TrimPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")}
					}
				}
			}
		}
		if got == nil || *got != *proxy {
			t.Errorf("DaemonSet %s: AUTH_PROXY_SECRET_FILE %s is %+v, want oauth2-proxy's password %+v", ds.Name, file, got, *proxy)
		}
	}
}
