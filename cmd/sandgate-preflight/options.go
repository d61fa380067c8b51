package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/ssopreflight"
	"github.com/sandgate/sandgate/internal/settings"
)

// Options is every setting of sandgate-preflight, from the environment and
// flags.
type Options struct {
	Kubeconfig                                   string
	NodeNamespace, ProxyNamespace, AuthNamespace string
	ProxyPort                                    int
	AllowedCIDRs                                 string
	ProbeURL                                     string
	Timeout                                      time.Duration

	problems []error // values the environment or flags could not parse
}

// Defaults are the shipped SSO variant's names.
func Defaults() Options {
	d := ssopreflight.Defaults()
	return Options{
		NodeNamespace: d.NodeNamespace, ProxyNamespace: d.ProxyNamespace, AuthNamespace: d.AuthNamespace,
		ProxyPort: int(d.ProxyPort), Timeout: 30 * time.Second,
	}
}

func (o *Options) settings() []settings.Setting {
	return []settings.Setting{
		settings.Kubeconfig(&o.Kubeconfig),
		settings.Var("node-namespace", "NODE_NAMESPACE", "namespace of the node proxies", settings.String(&o.NodeNamespace)),
		settings.Var("proxy-namespace", "PROXY_NAMESPACE", "namespace of oauth2-proxy", settings.String(&o.ProxyNamespace)),
		settings.Var("auth-namespace", "AUTH_NAMESPACE", "namespace of the auth API", settings.String(&o.AuthNamespace)),
		settings.Var("proxy-port", "PROXY_PORT", "the node proxies' port oauth2-proxy forwards to", settings.Int(&o.ProxyPort)),
		settings.Var("allowed-cidrs", "ALLOWED_CIDRS", "comma-separated CIDRs a NetworkPolicy may admit to the proxy port by ipBlock (your node CIDR, if the CNI masquerades hops)", settings.String(&o.AllowedCIDRs)),
		settings.Var("probe-url", "PROBE_URL", "a node proxy URL reachable from here (http://<node IP>:8080); an identity asserted in the header is sent there and must not be believed (neither a login nor the landing page); empty skips the probe", settings.String(&o.ProbeURL)),
		settings.Var("timeout", "TIMEOUT", "bound on the whole run", settings.Duration(&o.Timeout)),
	}
}

// load reads the environment and args over Defaults.
func load(args []string, getenv func(string) string, usageOut io.Writer) (Options, error) {
	o := Defaults()
	var err error
	o.problems, err = settings.Load("sandgate-preflight", o.settings(), args, getenv, usageOut, func() { usage(usageOut) })
	return o, err
}

// Validate reports every problem at once.
func (o Options) Validate() error {
	errs := append([]error(nil), o.problems...)
	if o.NodeNamespace == "" || o.ProxyNamespace == "" || o.AuthNamespace == "" {
		errs = append(errs, errors.New("the namespaces must not be empty"))
	}
	if o.ProxyPort < 1 || o.ProxyPort > 65535 {
		errs = append(errs, fmt.Errorf("proxy port %d is not a port", o.ProxyPort))
	}
	if _, err := o.allowedCIDRs(); err != nil {
		errs = append(errs, err)
	}
	if o.Timeout <= 0 {
		errs = append(errs, errors.New("timeout must be positive"))
	}
	return errors.Join(errs...)
}

func (o Options) allowedCIDRs() ([]netip.Prefix, error) {
	return settings.Prefixes("ALLOWED_CIDRS", o.AllowedCIDRs)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: sandgate-preflight [flags]

Checks a live cluster for the conditions the SSO variant
(manifests/exposure/sso) trusts X-Forwarded-User on, and exits 1 with one
line per failed condition:

  networkpolicy  a NetworkPolicy selects the node proxies for ingress, and
                 the rules covering their proxy port admit only oauth2-proxy,
                 other node proxies and --allowed-cidrs
  exposure       no NodePort, LoadBalancer or external-IP Service and no
                 Ingress leads to the node proxies; they are not on the host
                 network
  header         the auth API trusts an AUTH_PROXY_HEADER, the node proxies
                 strip the same header (and trust no catch-all range), and
                 with --probe-url an identity asserted in it from here is
                 not believed

Run it after every change to the SSO variant. It reads namespaces, pods,
DaemonSets, Deployments, ConfigMaps, Services, EndpointSlices, Ingresses and
NetworkPolicies; Gateway API routes are not checked. Every flag can also be
set by the environment variable in brackets; flags win.

`)
	d := Defaults()
	settings.Usage(w, d.settings())
}
