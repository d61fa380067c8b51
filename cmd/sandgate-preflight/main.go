// Command sandgate-preflight checks a live cluster for the SSO variant's
// trust boundary (internal/clustertools/ssopreflight) and exits non-zero with a reason
// per failed condition. See `sandgate-preflight --help`.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandgate/sandgate/internal/clustertools/ssopreflight"
	"github.com/sandgate/sandgate/internal/settings"
)

func main() { settings.Main(run) }

// run is main without the process: 0 when every condition holds, 1 when
// one fails or the cluster cannot be read, 2 on a usage error.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := load(args, getenv, stdout)
	if code, ok := settings.Loaded("sandgate-preflight", stderr, err, o.Validate); !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	po, err := o.preflightOptions()
	if err != nil {
		fmt.Fprintf(stderr, "sandgate-preflight: %v\n", err)
		return 1
	}
	results, err := ssopreflight.Run(ctx, po)
	if err != nil {
		fmt.Fprintf(stderr, "sandgate-preflight: %v\n", err)
		return 1
	}
	for _, r := range results {
		if r.OK {
			fmt.Fprintf(stdout, "ok   %s\n", r.Check)
		} else {
			fmt.Fprintf(stdout, "FAIL %s: %s\n", r.Check, r.Reason)
		}
	}
	if ssopreflight.Failed(results) {
		fmt.Fprintln(stderr, "sandgate-preflight: the SSO variant's trust boundary does not hold (see FAIL lines)")
		return 1
	}
	return 0
}

// preflightOptions connects to the cluster and fills the checks' Options.
func (o Options) preflightOptions() (ssopreflight.Options, error) {
	var cfg *rest.Config
	var err error
	if o.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return ssopreflight.Options{}, fmt.Errorf("load cluster config: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return ssopreflight.Options{}, fmt.Errorf("create cluster client: %w", err)
	}
	cidrs, _ := o.allowedCIDRs()
	po := ssopreflight.Defaults()
	po.Kube = kube
	po.NodeNamespace, po.ProxyNamespace, po.AuthNamespace = o.NodeNamespace, o.ProxyNamespace, o.AuthNamespace
	po.ProxyPort = int32(o.ProxyPort)
	po.AllowedCIDRs = cidrs
	po.ProbeURL = o.ProbeURL
	po.HTTPClient = &http.Client{Timeout: o.Timeout / 3}
	return po, nil
}
