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
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/gobuild"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// loopbackProxies are the demo's trusted proxies: the entry forwarders,
// the auth API forwarder and node proxies hopping to each other all
// connect from loopback addresses.
const loopbackProxies = "127.0.0.0/8"

// authapiRun is what one auth API replica needs besides its manifests.
type authapiRun struct {
	pod, listen, internal, ops, kubeconfig string
	local                                  localRun
}

// localRun is what every process of the demo runs with instead of the
// cluster's: the sandbox namespace when --namespace moves it, the idle
// timings and the routing.
type localRun struct {
	namespace                   string // empty: the manifests'
	idleTimeout, reportInterval string
	routing                     routing
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

// nodeRun is what one node's proxy needs besides its manifests.
type nodeRun struct {
	node, listen, ops, logRoot string
	kubeconfig, tokenFile      string
	hopKeyFile                 string
	authURL, internalURL       string
	local                      localRun
}

// authapiOverrides are the settings a replica runs with instead of its
// Deployment's: a kubeconfig instead of the in-cluster ServiceAccount,
// loopback listeners, plain-HTTP cookies, loopback trusted proxies, the
// demo's idle timings and its admin account (demoAdmin). Everything else, the allowed callers of /internal/
// included, is the manifests'.
func authapiOverrides(r authapiRun) map[string]string {
	over := map[string]string{
		"KUBECONFIG":             r.kubeconfig,
		"LISTEN_ADDR":            r.listen,
		"INTERNAL_ADDR":          r.internal,
		"OPS_ADDR":               r.ops,
		"COOKIE_SECURE":          "false",
		"ALLOW_INSECURE_COOKIES": "1",
		"TRUSTED_PROXIES":        loopbackProxies,
		"IDLE_TIMEOUT":           r.local.idleTimeout,
		"REPORT_INTERVAL":        r.local.reportInterval,
		"ADMINS":                 demoAdmin,
	}
	if r.local.namespace != "" {
		over["NAMESPACE"] = r.local.namespace
	}
	maps.Copy(over, r.local.routing.env(false))
	return over
}

// nodeproxyOverrides are the settings a node proxy runs with instead of
// its DaemonSet's: a kubeconfig, the node's name and log root, files for
// the projected token and the hop key Secret, the auth API's stand-in
// Services, loopback listeners without TLS, plain-HTTP cookies, loopback
// trusted proxies, the demo's REPORT_INTERVAL, and no egress listener (no
// model provider is reachable from the demo). An empty value unsets.
func nodeproxyOverrides(n nodeRun) map[string]string {
	over := map[string]string{
		"NODE_NAME":              n.node,
		"KUBECONFIG":             n.kubeconfig,
		"LISTEN_ADDR":            n.listen,
		"TLS_CERT_FILE":          "",
		"TLS_KEY_FILE":           "",
		"OPS_ADDR":               n.ops,
		"LOG_ROOT":               n.logRoot,
		"SA_TOKEN_FILE":          n.tokenFile,
		"HOP_KEY_FILE":           n.hopKeyFile,
		"AUTHAPI_URL":            n.authURL,
		"AUTHAPI_INTERNAL_URL":   n.internalURL,
		"JWKS_URL":               n.internalURL + "/.well-known/jwks.json",
		"COOKIE_SECURE":          "false",
		"ALLOW_INSECURE_COOKIES": "1",
		"TRUSTED_PROXIES":        loopbackProxies,
		"REPORT_INTERVAL":        n.local.reportInterval,
		"EGRESS_PROVIDERS":       "",
	}
	if n.local.namespace != "" {
		over["NAMESPACE"] = n.local.namespace
	}
	maps.Copy(over, n.local.routing.env(true))
	return over
}

// podEnv is a process's environment: the little of the demo's own
// environment in base, the workload's (ConfigMaps, then its env), its
// downward API fields as the kubelet would fill them, then over, where an
// empty value unsets.
func podEnv(base map[string]string, w workload, fields, over map[string]string) ([]string, error) {
	resolved := map[string]string{}
	for k, path := range w.fieldRefs {
		v, ok := fields[path]
		if !ok {
			return nil, fmt.Errorf("%s %s: %s reads fieldRef %s, which the demo cannot fill", w.kind, w.name, k, path)
		}
		resolved[k] = v
	}
	return environ(base, w.env, resolved, over), nil
}

// environ merges layers of variables, later ones winning and an empty value
// unsetting, into a sorted KEY=VALUE list.
func environ(layers ...map[string]string) []string {
	all := map[string]string{}
	for _, l := range layers {
		maps.Copy(all, l)
	}
	out := make([]string, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if all[k] != "" {
			out = append(out, k+"="+all[k])
		}
	}
	return out
}

// overridden describes over against the workload's own settings: each
// variable the demo changes, adds or unsets, in order.
func overridden(w workload, over map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(over)) {
		was, had := w.env[k]
		switch v := over[k]; {
		case v == "" && had:
			parts = append(parts, k+" (unset)")
		case v != "" && v != was:
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
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
	cmd := gobuild.Command(ctx, "", dir, missing...)
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
	authapi   workload // the rendered Deployment
	nodeproxy workload // the rendered DaemonSet
	local     localRun
	nodes     []string
	nodeIP    func(string) string
	logRoot   func(string) string
	getenv    func(string) string
	bins      demoBinaries
}

// demoBinaries are the platform's binaries the demo runs.
type demoBinaries struct{ authapi, nodeproxy string }

// startPlatform starts the auth API replicas behind round-robin
// forwarders for their public and internal Services, then one node proxy
// per node on its InternalIP behind its entry port, and waits until all
// are ready. Each runs as its workload's ServiceAccount with its
// workload's settings, and the demo's overrides, which it prints first.
// On error it stops what it started.
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
	base := baseEnv(pc.getenv)
	sandboxNS := pc.authapi.namespace
	if pc.local.namespace != "" {
		sandboxNS = pc.local.namespace
	}

	// Identities: a kubeconfig for each workload's ServiceAccount, and the
	// node proxies' token for the auth API's internal audience (the
	// DaemonSet's projected token).
	authKubeconfig, err := serviceAccountKubeconfig(ctx, pc.cp, sandboxNS, pc.authapi.serviceAccount, procDir)
	if err != nil {
		return nil, err
	}
	nodeKubeconfig, err := serviceAccountKubeconfig(ctx, pc.cp, pc.nodeproxy.namespace, pc.nodeproxy.serviceAccount, procDir)
	if err != nil {
		return nil, err
	}
	audience := pc.authapi.env["INTERNAL_AUDIENCE"]
	if audience == "" {
		audience = "sandgate-authapi"
	}
	token, err := pc.cp.ServiceAccountToken(ctx, pc.nodeproxy.namespace, pc.nodeproxy.serviceAccount, 24*3600, audience)
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

	fmt.Fprintf(stdout, ">> starting %d auth API replicas as %s/%s with the settings of %s %s/%s\n", pc.cfg.authReplicas,
		sandboxNS, pc.authapi.serviceAccount, pc.authapi.kind, pc.authapi.namespace, pc.authapi.name)
	var publicAddrs, internalAddrs []string
	for i := range pc.cfg.authReplicas {
		addrs, err := freeAddrs("127.0.0.1", 3)
		if err != nil {
			return nil, err
		}
		r := authapiRun{pod: fmt.Sprintf("authapi-%d", i), listen: addrs[0], internal: addrs[1], ops: addrs[2],
			kubeconfig: authKubeconfig, local: pc.local}
		over := authapiOverrides(r)
		if i == 0 {
			fmt.Fprintf(stdout, "   the demo's overrides (authapi-0): %s\n", overridden(pc.authapi, over))
		}
		env, err := podEnv(base, pc.authapi, map[string]string{"metadata.name": r.pod, "metadata.namespace": sandboxNS, "status.podIP": "127.0.0.1"}, over)
		if err != nil {
			return nil, err
		}
		proc, err := controlplane.StartProcess(r.pod, procDir, pc.bins.authapi, env)
		if err != nil {
			return nil, err
		}
		p.procs = append(p.procs, proc)
		if err := waitReady(ctx, proc, r.ops, pc.cfg.readyTimeout, log); err != nil {
			return nil, err
		}
		publicAddrs, internalAddrs = append(publicAddrs, r.listen), append(internalAddrs, r.internal)
	}
	svc, err := listenForward("127.0.0.1:0", publicAddrs...)
	if err != nil {
		return nil, fmt.Errorf("auth API service: %w", err)
	}
	p.forwarders = append(p.forwarders, svc)
	internalSvc, err := listenForward("127.0.0.1:0", internalAddrs...)
	if err != nil {
		return nil, fmt.Errorf("auth API internal service: %w", err)
	}
	p.forwarders = append(p.forwarders, internalSvc)

	fmt.Fprintf(stdout, ">> starting a node proxy on each of %d nodes as %s/%s with the settings of %s %s/%s\n", len(pc.nodes),
		pc.nodeproxy.namespace, pc.nodeproxy.serviceAccount, pc.nodeproxy.kind, pc.nodeproxy.namespace, pc.nodeproxy.name)
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
		addrs, err := freeAddrs("127.0.0.1", 1)
		if err != nil {
			return nil, err
		}
		ops := addrs[0]
		local := pc.local
		local.routing.publicOrigin = "http://" + net.JoinHostPort(subdomainMainHost, strconv.Itoa(pc.cfg.httpPort+i))
		n := nodeRun{
			node: node, listen: net.JoinHostPort(ips[i], strconv.Itoa(port)), ops: ops,
			logRoot: pc.logRoot(node), kubeconfig: nodeKubeconfig, tokenFile: tokenFile, hopKeyFile: hopKeyFile,
			authURL: "http://" + svc.addr(), internalURL: "http://" + internalSvc.addr(), local: local,
		}
		over := nodeproxyOverrides(n)
		if i == 0 {
			fmt.Fprintf(stdout, "   the demo's overrides (node %s): %s\n", node, overridden(pc.nodeproxy, over))
		}
		env, err := podEnv(base, pc.nodeproxy, map[string]string{"spec.nodeName": node, "metadata.namespace": pc.nodeproxy.namespace}, over)
		if err != nil {
			return nil, err
		}
		proc, err := controlplane.StartProcess("nodeproxy-"+node, procDir, pc.bins.nodeproxy, env)
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
		if local.routing.mode == string(userorigin.Subdomain) {
			url = local.routing.publicOrigin + "/"
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

// serviceAccountKubeconfig writes a kubeconfig for the ServiceAccount
// namespace/name into dir and returns its path.
func serviceAccountKubeconfig(ctx context.Context, cp *controlplane.ControlPlane, namespace, name, dir string) (string, error) {
	rc, err := cp.ServiceAccountConfig(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, namespace+"."+name+".kubeconfig")
	return path, controlplane.WriteKubeconfig(rc, path)
}

// freeAddrs reserves n distinct free ports on host and releases them for
// a child.
func freeAddrs(host string, n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("reserve a port on %s: %w", host, err)
		}
		lns = append(lns, ln)
	}
	out := make([]string, n)
	for i, ln := range lns {
		out[i] = ln.Addr().String()
	}
	return out, nil
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
