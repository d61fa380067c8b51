package clusterjourney

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/clusterinstall"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// partOf labels every object sandgate ships, kustomize and chart alike.
const partOf = "app.kubernetes.io/part-of=sandgate"

// helmRelease is the release name and the namespace that keeps its record.
const helmRelease, helmNamespace = "sandgate", "default"

// helmLifecycle replaces the kustomize install with the chart on the same
// nodes: the kustomize objects deleted, `helm install` with the images
// built here, a user served through both nodes, `helm upgrade` to a
// changed setting that reaches the pods while the user's session holds,
// the admin CLI through the real entries with the admin that upgrade
// names, and `helm uninstall`, after which no object of sandgate's and no record
// of the release is left in the cluster.
func (j *journey) helmLifecycle() {
	j.t.Helper()
	overlay := filepath.Join(j.e.Dir, "overlay")
	if out, err := j.kubectlWithin(5*time.Minute, "delete", "-k", overlay, "--wait=true", "--timeout=280s"); err != nil {
		j.t.Fatalf("delete the kustomize install: %v %s", err, out)
	}
	j.expectNothingLeft("after deleting the kustomize install")

	version := envOr("VERSION", "dev")
	j.helm(5*time.Minute, "install", helmRelease, filepath.Join(repoRoot(j.t), "charts", "sandgate"),
		"--set", "images.authapi=sandgate.local/authapi,images.nodeproxy=sandgate.local/nodeproxy",
		"--set-string", "images.tag="+version,
		"--set-string", "images.agent=sandgate.local/agent-standin:"+version,
		"--set-string", "sandboxes.publicHosts="+strings.Join(append(append([]string{}, j.e.NodeIPs...), "localhost"), `\,`),
		"--set-file", "tls.certificate="+filepath.Join(overlay, "tls.crt"),
		"--set-file", "tls.key="+filepath.Join(overlay, "tls.key"),
		"--set", "hopKey.generate=true",
		"--wait", "--timeout=280s")
	j.waitWarmPool()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if err := clusterinstall.WaitServing(ctx, j.e.URLs, j.e.CAFile); err != nil {
		j.t.Fatalf("after helm install: %v", err)
	}
	j.t.Logf("after helm install and the warm pool, every entry answered in %s", time.Since(start).Round(time.Millisecond))
	b := j.signup(1, "bob")
	for i := range j.e.Nodes {
		resp, body := j.do(i, http.MethodGet, "/u/bob/", "", b.browser(j, i))
		j.expect(resp, body, http.StatusOK, "bob's agent page on "+j.e.Nodes[i]+" after helm install")
	}
	j.expectRelease(b, releaseV05)
	j.suspendAndWake(b)

	j.helm(5*time.Minute, "upgrade", helmRelease, filepath.Join(repoRoot(j.t), "charts", "sandgate"),
		"--reuse-values", "--set-string", "authapi.config.IDLE_TIMEOUT=30m", "--set-string", "authapi.config.ADMINS=bob", "--wait", "--timeout=280s")
	if got := j.authAPISetting("IDLE_TIMEOUT"); got != "30m" {
		j.t.Fatalf("after helm upgrade the auth API's IDLE_TIMEOUT is %q, want 30m", got)
	}
	for i := range j.e.Nodes {
		resp, body := j.do(i, http.MethodGet, "/u/bob/", "", b.browser(j, i))
		j.expect(resp, body, http.StatusOK, "bob's session on "+j.e.Nodes[i]+" after helm upgrade")
	}
	j.adminCLI(b)

	j.helm(5*time.Minute, "uninstall", helmRelease, "--wait", "--timeout=280s")
	testkit.Within(j.t, 3*time.Minute, "sandgate's namespaces to be gone after helm uninstall", func() bool {
		out, err := j.kubectl("get", "namespaces", clusterinstall.SandboxNamespace, clusterinstall.NodeProxyNamespace, "--ignore-not-found", "-o", "name")
		return err == nil && out == ""
	})
	j.expectNothingLeft("after helm uninstall")
	if out, err := j.kubectl("-n", helmNamespace, "get", "secrets", "-l", "owner=helm", "-o", "name"); err != nil || out != "" {
		j.t.Fatalf("helm uninstall left its release record: %v %s", err, out)
	}
}

// suspendAndWake writes a message to b's agent, suspends its Sandbox as
// the idle sweeper does (the chart keeps the shipped IDLE_TIMEOUT), and
// wakes it with the next request on each node, the message intact.
func (j *journey) suspendAndWake(b account) {
	j.t.Helper()
	resp, body := j.do(0, http.MethodPost, "/u/"+b.user+"/api/messages", `{"text":"kept by the chart's sandbox"}`, b.api(j, 0, "application/json"))
	j.expect(resp, body, http.StatusCreated, b.user+" posts a message")
	if out, err := j.kubectl("-n", clusterinstall.SandboxNamespace, "patch", "sandbox", b.sandbox, "--type=merge",
		"-p", `{"spec":{"operatingMode":"Suspended"}}`); err != nil {
		j.t.Fatalf("suspend %s's Sandbox: %v %s", b.user, err, out)
	}
	suspended := time.Now()
	j.waitSuspended(b, 2*time.Minute)
	j.t.Logf("%s's Sandbox suspended, its pod gone and the pod-name annotation cleared in %s", b.user, time.Since(suspended).Round(time.Millisecond))
	woken := time.Now()
	for i := range j.e.Nodes {
		j.expectMessage(len(j.e.Nodes)-1-i, b, "kept by the chart's sandbox")
	}
	j.t.Logf("%s's agent woken by the next request and served on both nodes, the message intact, in %s", b.user, time.Since(woken).Round(time.Millisecond))
}

// helm runs the Helm that make builds (HELM) against the cluster for at
// most d.
func (j *journey) helm(d time.Duration, args ...string) {
	j.t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		j.t.Fatal("HELM is not set: run the journey through make e2e-cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	args = append(args, "--kubeconfig", j.e.Kubeconfig, "--namespace", helmNamespace)
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		j.t.Fatalf("helm %s: %v\n%s", args[0], err, out)
	}
	j.t.Logf("helm %s:\n%s", args[0], strings.TrimSpace(string(out)))
}

// waitWarmPool waits until the warm pool holds its two ready sandboxes,
// as the kustomize install does before it reports done.
func (j *journey) waitWarmPool() {
	j.t.Helper()
	if out, err := j.kubectlWithin(5*time.Minute, "-n", clusterinstall.SandboxNamespace, "wait",
		"--for=jsonpath={.status.readyReplicas}=2", "sandboxwarmpool/dsh-pool", "--timeout=280s"); err != nil {
		j.t.Fatalf("the chart's warm pool: %v %s", err, out)
	}
}

// authAPISetting reads key from the ConfigMaps the auth API's pods take
// their settings from.
func (j *journey) authAPISetting(key string) string {
	j.t.Helper()
	names, err := j.kubectl("-n", clusterinstall.SandboxNamespace, "get", "deployment", "authapi",
		"-o", "jsonpath={.spec.template.spec.containers[0].envFrom[*].configMapRef.name}")
	if err != nil {
		j.t.Fatalf("read the auth API's ConfigMaps: %v %s", err, names)
	}
	for _, name := range strings.Fields(names) {
		v, err := j.kubectl("-n", clusterinstall.SandboxNamespace, "get", "configmap", name, "-o", "jsonpath={.data."+key+"}")
		if err != nil {
			j.t.Fatalf("read ConfigMap %s: %v %s", name, err, v)
		}
		if v != "" {
			return v
		}
	}
	return ""
}

// expectNothingLeft fails if any object of any listable kind, in any
// namespace, carries sandgate's part-of label.
func (j *journey) expectNothingLeft(when string) {
	j.t.Helper()
	kinds, err := j.kubectl("api-resources", "--verbs=list,delete", "-o", "name")
	if err != nil {
		j.t.Fatalf("list the API's kinds: %v %s", err, kinds)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.e.Kubectl, "--kubeconfig="+j.e.Kubeconfig, "get", strings.Join(strings.Fields(kinds), ","),
		"--all-namespaces", "-l", partOf, "--ignore-not-found", "-o", "name")
	var stderr strings.Builder
	cmd.Stderr = &stderr // deprecation warnings, not objects
	stdout, err := cmd.Output()
	if err != nil {
		j.t.Fatalf("list sandgate's objects %s: %v %s", when, err, stderr.String())
	}
	if out := strings.TrimSpace(string(stdout)); out != "" {
		j.t.Fatalf("%s these objects of sandgate's are left:\n%s", when, out)
	}
}
