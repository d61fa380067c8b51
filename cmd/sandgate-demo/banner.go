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
	"github.com/sandgate/sandgate/internal/sim/cluster"
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

// printBanner tells the user how to look at the running demo.
func printBanner(w io.Writer, cfg config, kubectl, kubeconfig string, sim *cluster.Cluster) {
	if kubectl == "" {
		kubectl = "kubectl"
	}
	k := fmt.Sprintf("%s --kubeconfig %s -n %s", kubectl, kubeconfig, cfg.namespace)
	fmt.Fprintf(w, `
sandgate demo is running: a real kube-apiserver and a simulated %d-node cluster.

  kubeconfig:  %s
  look:        %s get sandboxclaims,sandboxes,pods
  claim one:   printf 'apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\nmetadata: {name: dsh-alice}\nspec: {warmPoolRef: {name: dsh-pool}}\n' | %s apply -f -
  suspend it:  %s patch sandbox NAME --type merge -p '{"spec":{"operatingMode":"Suspended"}}'
`, cfg.nodes, kubeconfig, k, k, k)
	for _, node := range sim.Kubelet.NodeNames() {
		fmt.Fprintf(w, "  node %s: InternalIP %s, pod logs in %s\n", node, sim.Kubelet.NodeIP(node), sim.Kubelet.LogRoot(node))
	}
	fmt.Fprintln(w, "\nPress Ctrl-C to stop; every process and file above goes away.")
}
