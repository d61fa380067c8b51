package drain

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// margin is how much longer than the drain delay Request waits for the
// answer; the kubelet's grace period bounds the preStop hook anyway.
const margin = 5 * time.Second

// Request is the "drain" subcommand, the pod's preStop hook run inside the
// container: it asks the process whose ops listener is opsAddr (its
// OPS_ADDR, such as ":9090") to drain, over loopback when the listener is
// bound to every address, and waits for the answer, which comes once delay
// (its DRAIN_DELAY) has passed.
func Request(ctx context.Context, opsAddr string, delay time.Duration) error {
	target, err := localTarget(opsAddr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, delay+margin)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+target+"/drain", nil)
	if err != nil {
		return fmt.Errorf("build drain request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("drain via %s: %w", target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("drain via %s: %s: %s", target, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// localTarget is the host:port to reach the listener bound to opsAddr
// from inside the pod.
func localTarget(opsAddr string) (string, error) {
	host, port, err := net.SplitHostPort(opsAddr)
	if err != nil {
		return "", fmt.Errorf("ops address %q: %w", opsAddr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}
