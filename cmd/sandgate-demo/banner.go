package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/testing/sim/cluster"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// waitForPools waits until every warm pool in the namespace reports all its
// spares Ready, printing progress when it changes.
func waitForPools(ctx context.Context, restCfg *rest.Config, cfg config, stdout io.Writer) error {
	client, err := sandboxapi.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("build sandbox client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.readyTimeout)
	defer cancel()
	last := ""
	for {
		pools, err := client.SandboxWarmPools(cfg.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list warm pools: %w", err)
		}
		var progress []string
		done := true
		for _, p := range pools.Items {
			progress = append(progress, fmt.Sprintf("%s %d/%d", p.Name, p.Status.ReadyReplicas, p.Spec.Replicas))
			done = done && p.Status.ReadyReplicas >= p.Spec.Replicas
		}
		if line := strings.Join(progress, ", "); line != last {
			fmt.Fprintf(stdout, ">> warm pool spares ready: %s\n", line)
			last = line
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for warm pool spares: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// printBanner tells the user where the platform answers and how to tour it.
func printBanner(w io.Writer, cfg config, kubectl, kubeconfig string, sim *cluster.Cluster, p *platform, authCM map[string]string) {
	if kubectl == "" {
		kubectl = "kubectl"
	}
	k := fmt.Sprintf("%s --kubeconfig %s -n %s", kubectl, kubeconfig, cfg.namespace)
	first := p.entries[0].url
	fmt.Fprintf(w, "\nsandgate demo ready: %s\n", first)
	for _, e := range p.entries[1:] {
		fmt.Fprintf(w, "  and through node %s: %s\n", e.node, e.url)
	}
	fmt.Fprintf(w, `
A real kube-apiserver, a simulated %d-node cluster, %d auth API replicas and
one node proxy per node, configured by the manifests' ConfigMaps.

  kubeconfig:  %s
  look:        %s get sandboxclaims,sandboxes,pods

Tour:
  1. Open %s in a browser and sign up with a user name; the auth API claims a
     warm sandbox (%s<user>) and sets a session cookie.
  2. Open your agent at %su/<user>/ (any node's URL works: a node proxy hops
     the request to the node that runs your pod).
  3. From a shell:
       curl -si -c /tmp/sandgate.cookies -X POST -H 'Content-Type: application/json' \
         -d '{"user":"alice"}' %susers
       curl -s -b /tmp/sandgate.cookies %su/alice/
  4. See the claim:  %s get sandboxclaims
  5. Idle suspend: leave your agent alone for IDLE_TIMEOUT (%s here; node
     proxies report activity every %s) and the leading auth API replica
     patches its Sandbox Suspended; watch it with
       %s get sandboxes -w
     An open but silent tab does not keep it awake.
  6. Wake-on-connect: open /u/<user>/ again. The proxy asks the auth API to
     wake the sandbox and holds the request until it is Ready (a browser
     that waits past WAKE_TIMEOUT gets a "waking your agent" page that
     retries by itself). Or suspend one by hand:
       %s patch sandbox NAME --type merge -p '{"spec":{"operatingMode":"Suspended"}}'
`, cfg.nodes, cfg.authReplicas, kubeconfig, k, first, authCM["CLAIM_PREFIX"], first, first, p.entries[len(p.entries)-1].url, k,
		demoIdleTimeout, demoReportInterval, k, k)
	if cfg.routingMode == string(userorigin.Subdomain) {
		fmt.Fprintf(w, `
Subdomain routing: /u/<user>/ on the main origin sends the browser, with a
single-use entry code, to the agent's own origin http://<user>.%s:<port>/,
where a host-only cookie holds its session; the main session cookie never
goes there. Browsers resolve *.localhost to loopback; for curl add
--resolve <user>.%s:<port>:127.0.0.1.
`, cfg.userDomain, cfg.userDomain)
	}
	fmt.Fprintln(w, "\nProcesses and their logs:")
	for _, proc := range p.procs {
		fmt.Fprintf(w, "  %-18s pid %-7d %s\n", proc.Name(), proc.Pid(), proc.LogPath())
	}
	for _, node := range sim.Kubelet.NodeNames() {
		fmt.Fprintf(w, "  node %s: InternalIP %s, pod logs in %s\n", node, sim.Kubelet.NodeIP(node), sim.Kubelet.LogRoot(node))
	}
	fmt.Fprintln(w, "\nPress Ctrl-C to stop; every process and file above goes away.")
}
