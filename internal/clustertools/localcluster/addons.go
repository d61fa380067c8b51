package localcluster

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

//go:embed addons/coredns.yaml
var corednsManifest string

//go:embed addons/netpol.yaml
var netpolManifest string

//go:embed addons/kuberouter.yaml
var kubeRouterManifest string

// Kubectl runs kubectl as cluster admin with stdin (may be empty) and
// returns its output.
func (c *Cluster) Kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, c.opts.Binaries.path("kubectl"), append([]string{"--kubeconfig=" + c.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// render fills a manifest template with the cluster's values.
func (c *Cluster) render(name, text string, extra map[string]string) (string, error) {
	vals := map[string]string{"Domain": ClusterDomain, "DNS": DNSAddr.String()}
	for k, v := range extra {
		vals[k] = v
	}
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, vals); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	return b.String(), nil
}

// waitNodesReady waits until every node reports Ready.
func (c *Cluster) waitNodesReady(ctx context.Context) error {
	return c.poll(ctx, 3*time.Minute, "nodes Ready", func(ctx context.Context) (bool, error) {
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == len(c.nodes), nil
	})
}

// poll calls check until it reports done, fails, or timeout passes; the
// timeout error names what was awaited and the nodes' runner logs.
func (c *Cluster) poll(ctx context.Context, timeout time.Duration, what string, check func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		done, err := check(ctx)
		if err != nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
		if done {
			return nil
		}
		for _, p := range c.procs {
			if p.Exited() {
				return fmt.Errorf("wait for %s: %s exited: %s", what, p.Name(), p.LogTail())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// queueProbe is a table with one rule that sends packets to an nfqueue,
// as kube-network-policies does with every new connection it judges.
const queueProbe = `table inet sandgate_queue_probe {
	chain post {
		type filter hook postrouting priority 0; policy accept;
		ip daddr 192.0.2.255 queue num 98 bypass
	}
}
`

// queueProbeScript loads queueProbe and removes it again: it fails where
// nftables cannot queue.
var queueProbeScript = fmt.Sprintf("nft -f - <<'EOF'\n%sEOF\nnft delete table inet sandgate_queue_probe", queueProbe)

// Enforcer names.
const (
	enforcerNetworkPolicies = "kube-network-policies"
	enforcerKubeRouter      = "kube-router"
)

// PolicyEnforcerForKernel names the NetworkPolicy enforcer a cluster on
// this machine will run, probed as choosePolicyEnforcer probes a node but in
// a throwaway network namespace, so make builds only that one. Needs root.
func PolicyEnforcerForKernel(ctx context.Context) (string, error) {
	if os.Geteuid() != 0 {
		return "", errors.New("probing nftables in a network namespace needs root")
	}
	if _, err := run(ctx, "unshare", "--net", "bash", "-c", queueProbeScript); err != nil {
		return enforcerKubeRouter, nil
	}
	return enforcerNetworkPolicies, nil
}

// choosePolicyEnforcer picks the NetworkPolicy enforcer: SIG Network's
// kube-network-policies where nftables can queue packets to userspace,
// else kube-router's policy controller, which needs only iptables and
// ipset. PolicyNote says why one was passed over.
func (c *Cluster) choosePolicyEnforcer(ctx context.Context, n node) {
	var notes []string
	if c.opts.Images.NetworkPolicies == "" {
		notes = append(notes, "no kube-network-policies image")
	} else {
		if _, err := runIn(ctx, n, "bash", "-c", queueProbeScript); err == nil {
			c.PolicyEnforcer = enforcerNetworkPolicies
			return
		}
		notes = append(notes, "kube-network-policies cannot run: this kernel's nftables refuses a queue rule (no nft_queue)")
	}
	if c.opts.Images.KubeRouter != "" {
		c.PolicyEnforcer = enforcerKubeRouter
	} else {
		notes = append(notes, "no kube-router image")
	}
	c.PolicyNote = strings.Join(notes, "; ")
}

// startPolicyEnforcer deploys the chosen enforcer and waits until it runs
// on every node.
func (c *Cluster) startPolicyEnforcer(ctx context.Context) error {
	var text string
	vals := map[string]string{}
	switch c.PolicyEnforcer {
	case "":
		return nil
	case enforcerNetworkPolicies:
		text, vals["Image"] = netpolManifest, c.opts.Images.NetworkPolicies
	case enforcerKubeRouter:
		text, vals["Image"], vals["ServiceCIDR"] = kubeRouterManifest, c.opts.Images.KubeRouter, ServiceNet.String()
	}
	m, err := c.render(c.PolicyEnforcer, text, vals)
	if err != nil {
		return err
	}
	if _, err := c.Kubectl(ctx, m, "apply", "-f", "-"); err != nil {
		return err
	}
	_, err = c.Kubectl(ctx, "", "-n", "kube-system", "rollout", "status", "daemonset/"+c.PolicyEnforcer, "--timeout=180s")
	return err
}

// startAddons deploys cluster DNS and storage, and waits for DNS.
func (c *Cluster) startAddons(ctx context.Context) error {
	dns, err := c.render("coredns", corednsManifest, map[string]string{"Image": c.opts.Images.CoreDNS})
	if err != nil {
		return err
	}
	if _, err := c.Kubectl(ctx, dns, "apply", "-f", "-"); err != nil {
		return err
	}
	if err := c.startStorage(ctx); err != nil {
		return err
	}
	if err := c.startPolicyEnforcer(ctx); err != nil {
		return err
	}
	_, err = c.Kubectl(ctx, "", "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=180s")
	return err
}
