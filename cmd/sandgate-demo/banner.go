package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/testing/sim/cluster"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// waitForPools waits until every warm pool in namespace reports all its
// spares Ready, printing progress when it changes.
func waitForPools(ctx context.Context, restCfg *rest.Config, namespace string, timeout time.Duration, stdout io.Writer) error {
	client, err := sandboxapi.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("build sandbox client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		pools, err := client.SandboxWarmPools(namespace).List(ctx, metav1.ListOptions{})
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

// demoAdmin is the account the demo's ADMINS names: whoever signs up
// with this name may use the admin page and API.
const demoAdmin = "ops"

// readyLine starts the line that tells the user, and the demo's test, that
// the platform answers, followed by the first node's URL.
const readyLine = "sandgate demo ready: "

// printBanner tells the user where the platform answers and how to tour it.
func printBanner(w io.Writer, cfg config, m rendered, kubectl, kubeconfig string, sim *cluster.Cluster, p *platform) {
	if kubectl == "" {
		kubectl = "kubectl"
	}
	k := fmt.Sprintf("%s --kubeconfig %s -n %s", kubectl, kubeconfig, m.sandboxNamespace())
	first, last := p.entries[0].url, p.entries[len(p.entries)-1].url
	claim := m.authapi.env["CLAIM_PREFIX"] + "<user>"
	fmt.Fprintf(w, "\n%s%s\n", readyLine, first)
	for _, e := range p.entries[1:] {
		fmt.Fprintf(w, "  and through node %s: %s\n", e.node, e.url)
	}
	fmt.Fprintf(w, `
Open %s in a browser, pick a user name and sign up: you get an access
token (keep it: it signs you in again) and your agent opens at
%su/<user>/ within a few seconds. Any node's URL works: a node proxy hops
the request to the node that runs your pod.

A real kube-apiserver, a simulated %d-node cluster, %d auth API replicas and
one node proxy per node, run with the manifests' settings and the overrides
listed above.

  kubeconfig:  %s
  look:        %s get sandboxclaims,sandboxes,pods

Tour:
  1. Your account is the SandboxClaim %s; it adopted a warm Sandbox
     from the pool, whose name is the claim's status.sandbox.name:
       %s get sandboxclaim %s -o jsonpath='{.status.sandbox.name}'
  2. The same from a shell:
       curl -si -c /tmp/sandgate.cookies -X POST -H 'Content-Type: application/json' \
         -d '{"user":"alice"}' %susers
       curl -s -b /tmp/sandgate.cookies %su/alice/
  3. Idle suspend: leave your agent alone for %s (--idle-timeout; node
     proxies report activity every %s) and the leading auth API replica
     suspends its Sandbox; watch it with
       %s get sandboxes -w
     An open but silent tab does not keep it awake; a page in use does.
  4. Wake on the next request: open /u/<user>/ again. The node proxy asks
     the auth API to wake the sandbox; a browser gets a page within about a
     second that shows the progress and opens the agent once it is ready
     (an API client's request is held until then, up to WAKE_TIMEOUT). Or
     suspend one by hand:
       %s patch sandbox "$(%s get sandboxclaim %s -o jsonpath='{.status.sandbox.name}')" \
         --type merge -p '{"spec":{"operatingMode":"Suspended"}}'
  5. The admin page: sign up as %s (the demo's ADMINS names it) and open
     %sadmin/accounts: every account with its state, node and last use,
     and the actions (suspend, wake, sign out, new token, budget, delete).
     The same from a shell, with %s's token:
       SANDGATE_URL=%s SANDGATE_ADMIN_TOKEN=<token> %s admin list
`, first, first, cfg.nodes, cfg.authReplicas, kubeconfig, k, claim, k, claim, first, last,
		cfg.idleTimeout, cfg.reportEvery, k, k, k, claim, demoAdmin, first, demoAdmin, first, filepath.Join(cfg.binDir, "authapi"))
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
