package ssojourney

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/gobuild"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// publicHost is the host name browsers use for oauth2-proxy; the test's
// client resolves it to oauth2-proxy's loopback address.
const publicHost = "sso.example.test"

// identityHeader is AUTH_PROXY_HEADER as manifests/exposure/sso sets it.
const identityHeader = "X-Forwarded-User"

// allowedGroup is the group oauth2-proxy admits (--allowed-group).
const allowedGroup = "sandgate-users"

// ssoPlatform is the SSO variant on loopback: the provider stand-in,
// oauth2-proxy (the node proxies' trusted proxy, which proves the
// identities it asserts with its basic auth password), the auth API
// and one node proxy per simulated node, each a real process.
type ssoPlatform struct {
	sim       *simtest.Env
	proxyAddr string   // oauth2-proxy's listener
	nodeAddrs []string // the node proxies' listeners, 127.0.1.<i>:<port>
	control   string   // the provider stand-in's user queue

	cp              *controlplane.ControlPlane
	adminKubeconfig string
	variant         []*unstructured.Unstructured // kubectl kustomize manifests/exposure/sso
	preflightBin    string                       // cmd/sandgate-preflight
}

// origin is the public origin, oauth2-proxy's.
func (p *ssoPlatform) origin() string {
	_, port, _ := net.SplitHostPort(p.proxyAddr)
	return "http://" + net.JoinHostPort(publicHost, port)
}

// toolBinary returns the path of a binary `make oauth2-proxy` builds, or
// skips t when it is absent (fails under CI).
func toolBinary(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(controlplane.DefaultCacheDir(os.Getenv), name)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	msg := fmt.Sprintf("%s not found at %s (make oauth2-proxy builds it)", name, path)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s; CI=%s requires the SSO journey to run", msg, os.Getenv("CI"))
	}
	t.Skipf("%s; skipping the SSO journey (set CI to make this a failure)", msg)
	return ""
}

// buildCommands builds the shipped auth API, node proxy and preflight
// commands.
func buildCommands(t *testing.T, dir string) (authAPI, nodeProxy, preflight string) {
	t.Helper()
	root, err := clustertest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := gobuild.Command(t.Context(), root, dir, "./cmd/authapi", "./cmd/nodeproxy", "./cmd/sandgate-preflight")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the commands: %v\n%s", err, out)
	}
	return filepath.Join(dir, "authapi"), filepath.Join(dir, "nodeproxy"), filepath.Join(dir, "sandgate-preflight")
}

// freePort returns a loopback address with a port nothing listens on.
func freePort(t *testing.T, host string) string {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// nodePort returns a port free on every simulated node's address, which
// the node proxies share (their PEER_PORT).
func nodePort(t *testing.T) string {
	t.Helper()
	for range 20 {
		ln1, err := net.Listen("tcp", "127.0.1.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(ln1.Addr().String())
		ln2, err := net.Listen("tcp", "127.0.1.2:"+port)
		ln1.Close()
		if err == nil {
			ln2.Close()
			return port
		}
	}
	t.Fatal("no port free on both node addresses")
	return ""
}

// start runs bin as a child process until t ends and waits until ready
// answers true.
func start(t *testing.T, dir, name, bin string, env []string, ready func() bool, args ...string) *controlplane.Process {
	t.Helper()
	p, err := controlplane.StartProcess(name, dir, bin, append(env, "PATH="+os.Getenv("PATH")), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(10 * time.Second); err != nil {
			t.Errorf("stop %s: %v", name, err)
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.LogTail())
		}
	})
	testkit.Within(t, 90*time.Second, name+" ready", func() bool { return p.Exited() || ready() })
	if p.Exited() {
		t.Fatalf("%s exited before it was ready", name)
	}
	return p
}

// answers reports whether url answers 200.
func answers(url string) func() bool {
	return func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
}

// startSSOPlatform starts every part; all stop when t ends.
func startSSOPlatform(t *testing.T) *ssoPlatform {
	t.Helper()
	oauth2Proxy, provider := toolBinary(t, "oauth2-proxy"), toolBinary(t, "mockoidc-standin")
	cp := testkit.ControlPlane(t)
	dir := t.TempDir()
	authBin, nodeBin, preflightBin := buildCommands(t, dir)
	p := &ssoPlatform{sim: simtest.Start(t, cp, simtest.Options{Replicas: 2, TrustedHosts: publicHost}), cp: cp, variant: ssoVariant(t), preflightBin: preflightBin}
	ns := p.sim.NS
	ctx := context.Background()

	adminKubeconfig := filepath.Join(dir, "admin.kubeconfig")
	if err := controlplane.WriteKubeconfig(cp.AdminConfig(), adminKubeconfig); err != nil {
		t.Fatal(err)
	}
	p.adminKubeconfig = adminKubeconfig
	authAddr, authOps := freePort(t, "127.0.0.1"), freePort(t, "127.0.0.1")
	start(t, dir, "authapi", authBin, []string{
		"KUBECONFIG=" + adminKubeconfig, "NAMESPACE=" + ns, "LISTEN_ADDR=" + authAddr, "OPS_ADDR=" + authOps,
		"POD_NAME=authapi-0", "POD_IP=127.0.0.1", "COOKIE_SECURE=false", "ALLOW_INSECURE_COOKIES=1",
		"INTERNAL_ALLOWED_SERVICE_ACCOUNTS=system:serviceaccount:" + ns + ":nodeproxy",
		"TRUSTED_PROXIES=127.0.0.0/8", "AUTH_PROXY_HEADER=" + identityHeader, "WAKE_TIMEOUT=60s",
		"ADMIN_GROUPS=" + allowedGroup,
	}, answers("http://"+authOps+"/readyz"))

	clustertest.GrantNodeProxy(t, p.sim.Core, ns)
	cfg, err := cp.ServiceAccountConfig(ctx, ns, "nodeproxy")
	if err != nil {
		t.Fatal(err)
	}
	nodeKubeconfig := filepath.Join(dir, "nodeproxy.kubeconfig")
	if err := controlplane.WriteKubeconfig(cfg, nodeKubeconfig); err != nil {
		t.Fatal(err)
	}
	saToken, err := cp.ServiceAccountToken(ctx, ns, "nodeproxy", 3600, authapi.DefaultInternalAudience)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile, hopKeyFile, proofFile := filepath.Join(dir, "token"), filepath.Join(dir, "hop.key"), filepath.Join(dir, "sso-proxy-proof")
	if err := os.WriteFile(tokenFile, []byte(saToken), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hopKeyFile, []byte(randomHex(t, 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The sso-proxy-proof Secret: oauth2-proxy's basic auth password and
	// the node proxies' AUTH_PROXY_SECRET_FILE.
	proof := randomHex(t, 32)
	if err := os.WriteFile(proofFile, []byte(proof), 0o600); err != nil {
		t.Fatal(err)
	}
	port := nodePort(t)
	for i := 1; i <= 2; i++ {
		node := fmt.Sprintf("%s-%d", ns, i)
		addr := net.JoinHostPort(fmt.Sprintf("127.0.1.%d", i), port)
		ops := freePort(t, fmt.Sprintf("127.0.1.%d", i))
		start(t, dir, node, nodeBin, []string{
			"KUBECONFIG=" + nodeKubeconfig, "NODE_NAME=" + node, "NAMESPACE=" + ns,
			"LISTEN_ADDR=" + addr, "OPS_ADDR=" + ops, "AUTHAPI_URL=http://" + authAddr,
			"SA_TOKEN_FILE=" + tokenFile, "HOP_KEY_FILE=" + hopKeyFile, "LOG_ROOT=" + p.sim.Cluster.Kubelet.LogRoot(node),
			"COOKIE_SECURE=false", "ALLOW_INSECURE_COOKIES=1",
			// As the SSO variant: oauth2-proxy's forwarded headers count
			// (and the other node proxies', whose hops also come from
			// 127.0.0.1 here, by their proof), and the identity header
			// only with oauth2-proxy's proof, from any address.
			"TRUSTED_PROXIES=127.0.0.1/32", "AUTH_PROXY_HEADER=" + identityHeader,
			"AUTH_PROXY_SECRET_FILE=" + proofFile,
		}, answers("http://"+ops+"/readyz"))
		p.nodeAddrs = append(p.nodeAddrs, addr)
	}

	providerAddr, controlAddr := freePort(t, "127.0.0.1"), freePort(t, "127.0.0.1")
	clientSecret := randomHex(t, 16)
	start(t, dir, "mockoidc-standin", provider, nil, answers("http://"+providerAddr+"/oidc/.well-known/openid-configuration"),
		"--addr="+providerAddr, "--control-addr="+controlAddr, "--client-id=sandgate", "--client-secret="+clientSecret)
	p.control = "http://" + controlAddr + "/users"

	p.proxyAddr = freePort(t, "127.0.0.1")
	start(t, dir, "oauth2-proxy", oauth2Proxy, []string{
		"OAUTH2_PROXY_CLIENT_ID=sandgate", "OAUTH2_PROXY_CLIENT_SECRET=" + clientSecret,
		"OAUTH2_PROXY_COOKIE_SECRET=" + randomHex(t, 16), "OAUTH2_PROXY_BASIC_AUTH_PASSWORD=" + proof,
	}, answers("http://"+p.proxyAddr+"/ping"), append(oauth2ProxyArgs(t, p.variant),
		"--oidc-issuer-url=http://"+providerAddr+"/oidc",
		"--allowed-group="+allowedGroup,
		"--http-address="+p.proxyAddr,
		"--upstream=http://"+p.nodeAddrs[0]+"/",
		"--redirect-url="+p.origin()+"/oauth2/callback",
		// Plain HTTP on loopback: the shipped variant serves HTTPS and
		// keeps its cookies Secure.
		"--cookie-secure=false",
	)...)
	return p
}

// ssoVariant returns the shipped SSO variant's objects (kubectl kustomize
// manifests/exposure/sso).
func ssoVariant(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	root, err := clustertest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bins, err := controlplane.FindBinaries(os.Getenv("KUBEBUILDER_ASSETS"), controlplane.DefaultCacheDir(os.Getenv))
	if err != nil || bins.Kubectl == "" {
		t.Fatalf("kubectl not found next to the control-plane binaries (run `make controlplane`): %v", err)
	}
	cmd := exec.Command(bins.Kubectl, "kustomize", filepath.Join(root, "manifests", "exposure", "sso"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize manifests/exposure/sso: %v\n%s", err, stderr.String())
	}
	objs, err := controlplane.DecodeManifests(data)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// oauth2ProxyArgs are the oauth2-proxy arguments of the shipped variant
// (objs), less those that name the site (listeners, upstream, issuer,
// group, Secure cookies), which the caller sets for loopback; so the
// journey proves the shipped arguments.
func oauth2ProxyArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	site := []string{"http-address", "upstream", "oidc-issuer-url", "allowed-group", "cookie-secure", "redirect-url"}
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" || obj.GetName() != "oauth2-proxy" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
			t.Fatal(err)
		}
		var args []string
		for _, a := range d.Spec.Template.Spec.Containers[0].Args {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !slices.Contains(site, name) {
				args = append(args, a)
			}
		}
		return args
	}
	t.Fatal("no oauth2-proxy Deployment in manifests/exposure/sso")
	return nil
}

// providerUser is who the provider stand-in signs in next.
type providerUser struct {
	Subject           string   `json:"sub"`
	Email             string   `json:"email"`
	PreferredUsername string   `json:"preferred_username"`
	Groups            []string `json:"groups"`
}

// queue makes u the provider's next signed-in user.
func (p *ssoPlatform) queue(t *testing.T, u providerUser) {
	t.Helper()
	body, _ := json.Marshal(u)
	resp, err := http.Post(p.control, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("queue %s at the provider: %s", u.Subject, resp.Status)
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
