package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// The ConfigMaps of manifests/authapi and manifests/daemonset.
const (
	authapiConfigMap   = "authapi-config"
	nodeproxyConfigMap = "nodeproxy-config"
)

// loopbackProxies are the demo's trusted proxies: the entry forwarders,
// the auth API forwarder and node proxies hopping to each other all
// connect from loopback addresses.
const loopbackProxies = "127.0.0.0/8"

// authapiRun is what one auth API replica needs besides its ConfigMap.
type authapiRun struct {
	pod, listen, ops, kubeconfig string
	routing                      routing
}

// routing is the demo's ROUTING_MODE and, in subdomain routing, the user
// origins' parent domain and the main origin a node proxy sends browsers
// back to.
type routing struct {
	mode, userDomain, publicOrigin string
}

// env is the routing's variables; path routing needs none.
func (r routing) env(publicOrigin bool) map[string]string {
	if r.mode != string(userorigin.Subdomain) {
		return nil
	}
	out := map[string]string{"ROUTING_MODE": r.mode, "USER_DOMAIN": r.userDomain}
	if publicOrigin {
		out["PUBLIC_ORIGIN"] = r.publicOrigin
	}
	return out
}

// subdomainMainHost is the main origin's host name in a subdomain demo:
// browsers resolve it, like *.localhost, to loopback.
const subdomainMainHost = "localhost"

// nodeRun is what one node's proxy needs besides its ConfigMap.
type nodeRun struct {
	node, listen, ops, logRoot string
	kubeconfig, tokenFile      string
	hopKeyFile                 string
	authURL                    string
	routing                    routing
}

// The demo's idle-suspend timings: short enough to watch a sandbox suspend
// and wake during a tour.
const (
	demoIdleTimeout    = "2m"
	demoReportInterval = "5s"
)

// authapiEnv is a replica's environment: the ConfigMap as the Deployment's
// envFrom gives it, then the local run's overrides (a kubeconfig instead
// of the in-cluster ServiceAccount, loopback listeners, plain-HTTP cookies,
// loopback trusted proxies, a short IDLE_TIMEOUT).
func authapiEnv(base, cm map[string]string, namespace string, r authapiRun) []string {
	over := map[string]string{
		"NAMESPACE":              namespace,
		"KUBECONFIG":             r.kubeconfig,
		"LISTEN_ADDR":            r.listen,
		"OPS_ADDR":               r.ops,
		"COOKIE_SECURE":          "false",
		"ALLOW_INSECURE_COOKIES": "1",
		"TRUSTED_PROXIES":        loopbackProxies,
		"POD_NAME":               r.pod,
		"POD_IP":                 "127.0.0.1",
		"IDLE_TIMEOUT":           demoIdleTimeout,
		"REPORT_INTERVAL":        demoReportInterval,
	}
	if cm["NAMESPACE"] != namespace {
		over["INTERNAL_ALLOWED_SERVICE_ACCOUNTS"] = "system:serviceaccount:" + namespace + ":nodeproxy"
	}
	return environ(base, cm, over, r.routing.env(false))
}

// nodeproxyEnv is a node proxy's environment: the ConfigMap as the
// DaemonSet's envFrom gives it, then the overrides the DaemonSet's pod
// spec and the local run need (NODE_NAME, the node's log root, the
// projected token file, the shared hop key, the auth API address, loopback
// listeners, plain-HTTP cookies, loopback trusted proxies, the demo's
// REPORT_INTERVAL).
func nodeproxyEnv(base, cm map[string]string, namespace string, n nodeRun) []string {
	return environ(base, cm, map[string]string{
		"NAMESPACE":              namespace,
		"NODE_NAME":              n.node,
		"KUBECONFIG":             n.kubeconfig,
		"LISTEN_ADDR":            n.listen,
		"OPS_ADDR":               n.ops,
		"LOG_ROOT":               n.logRoot,
		"SA_TOKEN_FILE":          n.tokenFile,
		"HOP_KEY_FILE":           n.hopKeyFile,
		"AUTHAPI_URL":            n.authURL,
		"JWKS_URL":               n.authURL + "/.well-known/jwks.json",
		"COOKIE_SECURE":          "false",
		"ALLOW_INSECURE_COOKIES": "1",
		"TRUSTED_PROXIES":        loopbackProxies,
		"REPORT_INTERVAL":        demoReportInterval,
	}, n.routing.env(true))
}

// environ merges layers of variables, later ones winning, into a sorted
// KEY=VALUE list.
func environ(layers ...map[string]string) []string {
	all := map[string]string{}
	for _, l := range layers {
		maps.Copy(all, l)
	}
	out := make([]string, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		out = append(out, k+"="+all[k])
	}
	return out
}

// baseEnv is the little of the demo's own environment the children get:
// nothing that could configure them by accident.
func baseEnv(getenv func(string) string) map[string]string {
	out := map[string]string{}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v := getenv(k); v != "" {
			out[k] = v
		}
	}
	return out
}

// locateBinaries returns the paths of authapi and nodeproxy in dir,
// building the missing ones with the go command first.
func locateBinaries(ctx context.Context, dir string, stdout io.Writer) (authapi, nodeproxy string, err error) {
	authapi, nodeproxy = filepath.Join(dir, "authapi"), filepath.Join(dir, "nodeproxy")
	var missing []string
	for _, p := range []string{authapi, nodeproxy} {
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			missing = append(missing, "./cmd/"+filepath.Base(p))
		}
	}
	if len(missing) == 0 {
		return authapi, nodeproxy, nil
	}
	fmt.Fprintf(stdout, ">> building %s into %s\n", strings.Join(missing, " "), dir)
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", dir + "/"}, missing...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("build %s: %w: %s", strings.Join(missing, " "), err, out)
	}
	return authapi, nodeproxy, nil
}

// processes are the children the demo started, stopped together.
type processes []*controlplane.Process

// stop ends every process at once, each with grace to drain.
func (ps processes) stop(grace time.Duration) error {
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { errs[i] = p.Stop(grace) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitReady polls the process's /readyz until it answers 200, failing
// early with the process log when it exits.
func waitReady(ctx context.Context, p *controlplane.Process, opsAddr string, timeout time.Duration, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := "http://" + opsAddr + "/readyz"
	var lastErr error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				log.Info("ready", "process", p.Name())
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		lastErr = err
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited during start (log %s): %s", p.Name(), p.LogPath(), p.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last error: %v); log %s: %s", p.Name(), ctx.Err(), lastErr, p.LogPath(), p.LogTail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// freeAddr reserves a free port on host and releases it for a child.
func freeAddr(host string) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("reserve a port on %s: %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// peerPort finds one port free on every node IP: node proxies reach each
// other at <InternalIP>:<their own listen port>, so all listen on it.
func peerPort(ips []string) (int, error) {
	for range 20 {
		first, err := net.Listen("tcp", net.JoinHostPort(ips[0], "0"))
		if err != nil {
			return 0, fmt.Errorf("reserve a port on %s: %w", ips[0], err)
		}
		port := first.Addr().(*net.TCPAddr).Port
		held := []net.Listener{first}
		ok := true
		for _, ip := range ips[1:] {
			ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			held = append(held, ln)
		}
		for _, ln := range held {
			ln.Close()
		}
		if ok {
			return port, nil
		}
	}
	return 0, errors.New("no port free on every node IP")
}

// platform is the auth API and node proxies the demo runs as processes,
// and the forwarders standing in for their Services.
type platform struct {
	procs      processes
	forwarders []*forwarder
	entries    []entry // one per node, in node order
}

// entry is one node's browser-facing address.
type entry struct {
	node, url string
}

// platformConfig is what startPlatform needs from the rest of the demo.
type platformConfig struct {
	cfg       config
	dir       string // the demo's temporary directory
	cp        *controlplane.ControlPlane
	authCM    map[string]string
	nodeCM    map[string]string
	nodes     []string
	nodeIP    func(string) string
	logRoot   func(string) string
	getenv    func(string) string
	authapi   string // binary
	nodeproxy string // binary
}

// startPlatform starts the auth API replicas behind a round-robin
// forwarder, then one node proxy per node on its InternalIP behind its
// entry port, and waits until all are ready. On error it stops what it
// started.
func startPlatform(ctx context.Context, pc platformConfig, stdout io.Writer, log *slog.Logger) (_ *platform, err error) {
	p := &platform{}
	defer func() {
		if err != nil {
			p.stop(log)
		}
	}()
	procDir := filepath.Join(pc.dir, "proc")
	if err := os.MkdirAll(procDir, 0o700); err != nil {
		return nil, fmt.Errorf("create process dir: %w", err)
	}
	ns := pc.cfg.namespace
	base := baseEnv(pc.getenv)

	// Identities: kubeconfigs for both ServiceAccounts, and the node
	// proxies' token for the auth API's internal audience (the DaemonSet's
	// projected token).
	kubeconfigs := map[string]string{}
	for _, sa := range []string{"authapi", "nodeproxy"} {
		rc, err := pc.cp.ServiceAccountConfig(ctx, ns, sa)
		if err != nil {
			return nil, err
		}
		kubeconfigs[sa] = filepath.Join(procDir, sa+".kubeconfig")
		if err := controlplane.WriteKubeconfig(rc, kubeconfigs[sa]); err != nil {
			return nil, err
		}
	}
	audience := pc.authCM["INTERNAL_AUDIENCE"]
	if audience == "" {
		audience = "sandgate-authapi"
	}
	token, err := pc.cp.ServiceAccountToken(ctx, ns, "nodeproxy", 24*3600, audience)
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(procDir, "nodeproxy.token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return nil, fmt.Errorf("write node proxy token: %w", err)
	}
	// The nodeproxy-hop-key Secret: the node proxies hop to each other.
	hopKey := make([]byte, 32)
	rand.Read(hopKey)
	hopKeyFile := filepath.Join(procDir, "nodeproxy-hop.key")
	if err := os.WriteFile(hopKeyFile, []byte(hex.EncodeToString(hopKey)), 0o600); err != nil {
		return nil, fmt.Errorf("write node proxy hop key: %w", err)
	}

	fmt.Fprintf(stdout, ">> starting %d auth API replicas\n", pc.cfg.authReplicas)
	var authAddrs []string
	for i := range pc.cfg.authReplicas {
		listen, err := freeAddr("127.0.0.1")
		if err != nil {
			return nil, err
		}
		ops, err := freeAddr("127.0.0.1")
		if err != nil {
			return nil, err
		}
		r := authapiRun{pod: fmt.Sprintf("authapi-%d", i), listen: listen, ops: ops, kubeconfig: kubeconfigs["authapi"],
			routing: routing{mode: pc.cfg.routingMode, userDomain: pc.cfg.userDomain}}
		proc, err := controlplane.StartProcess(r.pod, procDir, pc.authapi, authapiEnv(base, pc.authCM, ns, r))
		if err != nil {
			return nil, err
		}
		p.procs = append(p.procs, proc)
		if err := waitReady(ctx, proc, ops, pc.cfg.readyTimeout, log); err != nil {
			return nil, err
		}
		authAddrs = append(authAddrs, listen)
	}
	svc, err := listenForward("127.0.0.1:0", authAddrs...)
	if err != nil {
		return nil, fmt.Errorf("auth API service: %w", err)
	}
	p.forwarders = append(p.forwarders, svc)

	fmt.Fprintf(stdout, ">> starting a node proxy on each of %d nodes\n", len(pc.nodes))
	ips := make([]string, len(pc.nodes))
	for i, n := range pc.nodes {
		ips[i] = pc.nodeIP(n)
	}
	port, err := peerPort(ips)
	if err != nil {
		return nil, err
	}
	type started struct {
		proc *controlplane.Process
		ops  string
	}
	var waits []started
	for i, node := range pc.nodes {
		ops, err := freeAddr("127.0.0.1")
		if err != nil {
			return nil, err
		}
		n := nodeRun{
			node: node, listen: net.JoinHostPort(ips[i], strconv.Itoa(port)), ops: ops,
			logRoot: pc.logRoot(node), kubeconfig: kubeconfigs["nodeproxy"], tokenFile: tokenFile, hopKeyFile: hopKeyFile,
			authURL: "http://" + svc.addr(),
			routing: routing{mode: pc.cfg.routingMode, userDomain: pc.cfg.userDomain,
				publicOrigin: "http://" + net.JoinHostPort(subdomainMainHost, strconv.Itoa(pc.cfg.httpPort+i))},
		}
		proc, err := controlplane.StartProcess("nodeproxy-"+node, procDir, pc.nodeproxy, nodeproxyEnv(base, pc.nodeCM, ns, n))
		if err != nil {
			return nil, err
		}
		p.procs = append(p.procs, proc)
		waits = append(waits, started{proc, ops})
		in := net.JoinHostPort(pc.cfg.httpHost, strconv.Itoa(pc.cfg.httpPort+i))
		fwd, err := listenForward(in, n.listen)
		if err != nil {
			return nil, fmt.Errorf("entry port for %s: %w", node, err)
		}
		p.forwarders = append(p.forwarders, fwd)
		url := "http://" + fwd.addr() + "/"
		if n.routing.mode == string(userorigin.Subdomain) {
			url = n.routing.publicOrigin + "/"
		}
		p.entries = append(p.entries, entry{node: node, url: url})
	}
	for _, w := range waits {
		if err := waitReady(ctx, w.proc, w.ops, pc.cfg.readyTimeout, log); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// stop closes the forwarders and ends every process.
func (p *platform) stop(log *slog.Logger) {
	for _, f := range p.forwarders {
		if err := f.close(); err != nil {
			log.Error("close forwarder", "addr", f.addr(), "error", err)
		}
	}
	if err := p.procs.stop(15 * time.Second); err != nil {
		log.Error("stop processes", "error", err)
	}
}
