package localcluster

import (
	"context"
	"fmt"
	"strings"
)

// setUpBridge creates the host bridge with the host's address on it, and
// the guard that keeps the cluster's ranges off every other interface.
func setUpBridge(ctx context.Context) error {
	steps := [][]string{
		{"ip", "link", "add", Bridge, "type", "bridge"},
		{"ip", "addr", "add", HostAddr.String() + "/" + fmt.Sprint(NodeNet.Bits()), "dev", Bridge},
		{"ip", "link", "set", Bridge, "up"},
	}
	for _, s := range steps {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			return fmt.Errorf("set up bridge: %w", err)
		}
	}
	return installGuard(ctx)
}

// guardRules is the nftables table that drops traffic of the cluster's
// ranges on any interface but the bridge and its ports: nothing from the node, pod or
// service ranges leaves the machine, whatever the routes say.
func guardRules() string {
	ranges := fmt.Sprintf("{ %s, %s, %s }", NodeNet, PodNet, ServiceNet)
	return fmt.Sprintf(`table inet %[1]s {
	chain forward {
		type filter hook forward priority -10; policy accept;
		ip saddr %[2]s oifname != "%[4]s" drop
		ip daddr %[2]s iifname != "%[4]s" drop
	}
	chain output {
		type filter hook output priority -10; policy accept;
		ip daddr %[2]s oifname != { "lo", "%[3]s" } drop
	}
}
`, nftTable, ranges, Bridge, "sgc*")
}

func installGuard(ctx context.Context) error {
	cmd := fmt.Sprintf("nft -f - <<'EOF'\n%sEOF\n", guardRules())
	if _, err := run(ctx, "bash", "-c", cmd); err != nil {
		return fmt.Errorf("install the nftables guard: %w", err)
	}
	return CheckGuard(ctx)
}

// CheckGuard fails unless the guard's drop rules are in place.
func CheckGuard(ctx context.Context) error {
	out, err := run(ctx, "nft", "list", "table", "inet", nftTable)
	if err != nil {
		return fmt.Errorf("the guard table is missing: %w", err)
	}
	for _, want := range []string{`oifname != "sgc*" drop`, `iifname != "sgc*" drop`, `oifname != { "lo", "` + Bridge + `" } drop`} {
		if !strings.Contains(out, want) {
			return fmt.Errorf("the guard table lacks the rule %q", want)
		}
	}
	return nil
}

// setUpNodeNetwork creates node n's network namespace, joined to the bridge
// by a veth pair, with routes to every other node's pod range.
func setUpNodeNetwork(ctx context.Context, n node, all []node) error {
	steps := [][]string{
		{"ip", "netns", "add", n.netns()},
		{"ip", "link", "add", n.veth(), "type", "veth", "peer", "name", "eth0", "netns", n.netns()},
		{"ip", "link", "set", n.veth(), "master", Bridge, "up"},
		{"ip", "-n", n.netns(), "link", "set", "lo", "up"},
		{"ip", "-n", n.netns(), "addr", "add", fmt.Sprintf("%s/%d", n.ip, NodeNet.Bits()), "dev", "eth0"},
		{"ip", "-n", n.netns(), "link", "set", "eth0", "up"},
		{"ip", "-n", n.netns(), "route", "add", "default", "via", HostAddr.String()},
		{"ip", "route", "add", n.podNet.String(), "via", n.ip.String()},
	}
	for _, o := range all {
		if o.index != n.index {
			steps = append(steps, []string{"ip", "-n", n.netns(), "route", "add", o.podNet.String(), "via", o.ip.String()})
		}
	}
	for _, s := range steps {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			return fmt.Errorf("set up %s's network: %w", n.name, err)
		}
	}
	for _, kv := range []string{"net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1", "net.ipv4.conf.all.route_localnet=1"} {
		if _, err := runIn(ctx, n, "sysctl", "-qw", kv); err != nil {
			return fmt.Errorf("set up %s's network: %w", n.name, err)
		}
	}
	return nil
}

// routeServices sends the host's traffic for Service IPs to node n, whose
// kube-proxy rules translate them, so the host can use cluster IPs.
func routeServices(ctx context.Context, n node) error {
	if _, err := run(ctx, "ip", "route", "add", ServiceNet.String(), "via", n.ip.String()); err != nil {
		return fmt.Errorf("route Services via %s: %w", n.name, err)
	}
	return nil
}
