package clusterjourney

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/clusterinstall"
	"github.com/sandgate/sandgate/internal/clustertools/localcluster"
)

// providerCall is what the provider stand-in received.
type providerCall struct {
	method, path, auth, from string
}

// providerStandin stands in for an OpenAI-compatible model provider: an
// HTTP server on the host's address on the node network, which pods and
// node proxies reach as they reach the API server. It records every call
// and answers a completion that carries no key.
type providerStandin struct {
	url   string // base URL the node proxies are given
	key   string // the real key, held only by the dsh-provider-keys Secret
	calls chan providerCall
}

// standinAnswer is the stand-in's completion, recognised in the sandbox.
const standinAnswer = "egress-standin-says-hello"

// startProviderStandin listens on the host's node-network address and
// stops at the end of the test.
func (j *journey) startProviderStandin() *providerStandin {
	j.t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(localcluster.HostAddr.String(), "0"))
	if err != nil {
		j.t.Fatalf("listen for the provider stand-in on the node network: %v", err)
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		j.t.Fatal(err)
	}
	p := &providerStandin{
		url:   "http://" + ln.Addr().String() + "/v1",
		key:   "sk-journey-standin-" + hex.EncodeToString(secret),
		calls: make(chan providerCall, 64),
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		select {
		case p.calls <- providerCall{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization"), from: r.RemoteAddr}:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"standin","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, standinAnswer)
	})}
	go func() { _ = srv.Serve(ln) }()
	j.t.Cleanup(func() { srv.Close() })
	return p
}

// configureEgress points the node proxies' egress listener at the
// stand-in, as an operator points it at a provider: the dsh-provider-keys
// Secret in the node proxies' namespace and EGRESS_PROVIDERS on the
// DaemonSet, then waits for the rollout and for both entries.
func (j *journey) configureEgress(p *providerStandin) {
	j.t.Helper()
	if out, err := j.kubectl("-n", clusterinstall.NodeProxyNamespace, "create", "secret", "generic", "dsh-provider-keys",
		"--from-literal=openai="+p.key); err != nil {
		j.t.Fatalf("create dsh-provider-keys: %v %s", err, redact(out, p.key))
	}
	providers := fmt.Sprintf(`[{"name":"openai","base_url":%q}]`, p.url)
	if out, err := j.kubectl("-n", clusterinstall.NodeProxyNamespace, "set", "env", "daemonset/nodeproxy", "--containers=nodeproxy", "EGRESS_PROVIDERS="+providers); err != nil {
		j.t.Fatalf("point the node proxies at the provider stand-in: %v %s", err, out)
	}
	if out, err := j.kubectlWithin(200*time.Second, "-n", clusterinstall.NodeProxyNamespace, "rollout", "status", "daemonset/nodeproxy", "--timeout=180s"); err != nil {
		j.t.Fatalf("node-proxy rollout with egress: %v %s", err, out)
	}
	for i := range j.e.Nodes {
		j.entryAcceptsAgain(i)
	}
}

// egressCall proves the egress path on real nodes from a's pod: the call
// to $OPENAI_BASE_URL reaches the stand-in with the real key, which is
// neither in the pod's environment nor in the answer, and a direct call
// to the stand-in is blocked by the enforced sandbox egress policy.
func (j *journey) egressCall(a account, p *providerStandin) {
	j.t.Helper()
	pod := j.sandboxPod(a)
	base := j.podEnv(pod, p.key)["OPENAI_BASE_URL"]
	if base == "" {
		j.t.Fatalf("pod %s has no OPENAI_BASE_URL", pod)
	}
	c := j.attachProbe(clusterinstall.SandboxNamespace, pod)
	drain(p.calls)

	out, err := j.kubectlWithin(30*time.Second, "-n", clusterinstall.SandboxNamespace, "exec", pod, "-c", c, "--",
		"timeout", "20", "wget", "-q", "-O", "-", "--header", "Authorization: Bearer sk-placeholder",
		"--header", "Content-Type: application/json", "--post-data", `{"model":"standin","messages":[{"role":"user","content":"hi"}]}`,
		base+"/chat/completions")
	if err != nil || !strings.Contains(out, standinAnswer) {
		logs, _ := j.kubectl("-n", "sandgate-node", "logs", "-l", "app.kubernetes.io/name=sandgate-nodeproxy", "--tail=200", "--prefix")
		var refusals []string
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, "egress") {
				refusals = append(refusals, l)
			}
		}
		j.t.Fatalf("model call from %s through %s: %v %s\nnode proxies' egress lines:\n%s", pod, base, err, redact(out, p.key), redact(strings.Join(refusals, "\n"), p.key))
	}
	if strings.Contains(out, p.key) {
		j.t.Fatalf("the answer in the sandbox holds the real key")
	}
	select {
	case got := <-p.calls:
		if got.method != http.MethodPost || got.path != "/v1/chat/completions" || got.auth != "Bearer "+p.key {
			j.t.Fatalf("the stand-in got %s %s with %s, want POST /v1/chat/completions with the real key", got.method, got.path, redactAuth(got.auth, p.key))
		}
		j.t.Logf("%s's call through %s reached the stand-in from %s with the real key", a.user, base, got.from)
	case <-time.After(10 * time.Second):
		j.t.Fatalf("the stand-in recorded no call from %s", pod)
	}

	drain(p.calls)
	direct := strings.TrimSuffix(p.url, "/v1") + "/v1/models"
	out, err = j.kubectlWithin(30*time.Second, "-n", clusterinstall.SandboxNamespace, "exec", pod, "-c", c, "--",
		"timeout", "5", "wget", "-q", "-O", "-", direct)
	reached := len(drain(p.calls)) > 0
	switch {
	case err == nil || reached:
		if j.e.PolicyEnforcer == "" {
			j.t.Logf("direct call from %s to %s got through: NOT ENFORCED, no NetworkPolicy enforcer runs", pod, direct)
			return
		}
		j.t.Fatalf("direct call from %s to the provider stand-in %s was not blocked (%s): %s", pod, direct, j.e.PolicyEnforcer, out)
	default:
		j.t.Logf("direct call from %s to %s blocked: %v %s", pod, direct, err, out)
	}
}

// podEnv is the literal environment of pod's app container. It fails the
// test when any of the pod holds key or the container reads a Secret.
func (j *journey) podEnv(pod, key string) map[string]string {
	j.t.Helper()
	raw, err := j.kubectl("-n", clusterinstall.SandboxNamespace, "get", "pod", pod, "-o", "json")
	if err != nil {
		j.t.Fatalf("read pod %s: %v", pod, err)
	}
	if strings.Contains(raw, key) {
		j.t.Fatalf("pod %s's spec or status holds the real key", pod)
	}
	var p podSpec
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		j.t.Fatalf("parse pod %s: %v", pod, err)
	}
	env, err := p.appEnv()
	if err != nil {
		j.t.Fatalf("pod %s: %v", pod, err)
	}
	return env
}

// podSpec is the part of a pod that its app container's environment is
// built from.
type podSpec struct {
	Spec struct {
		Containers []struct {
			Name    string `json:"name"`
			EnvFrom []struct {
				SecretRef *struct{} `json:"secretRef"`
			} `json:"envFrom"`
			Env []struct {
				Name      string `json:"name"`
				Value     string `json:"value"`
				ValueFrom *struct {
					SecretKeyRef *struct{} `json:"secretKeyRef"`
				} `json:"valueFrom"`
			} `json:"env"`
		} `json:"containers"`
	} `json:"spec"`
}

// appEnv is the first container's literal environment; a Secret in it is
// an error, since no provider key may reach a sandbox.
func (p podSpec) appEnv() (map[string]string, error) {
	if len(p.Spec.Containers) == 0 {
		return nil, errors.New("no containers")
	}
	c := p.Spec.Containers[0]
	for _, f := range c.EnvFrom {
		if f.SecretRef != nil {
			return nil, fmt.Errorf("container %s takes its environment from a Secret", c.Name)
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			return nil, fmt.Errorf("container %s reads %s from a Secret", c.Name, e.Name)
		}
	}
	return env, nil
}

// drain empties calls and returns what it held.
func drain(calls chan providerCall) []providerCall {
	var got []providerCall
	for {
		select {
		case c := <-calls:
			got = append(got, c)
		default:
			return got
		}
	}
}

// redact keeps a key out of the test's output.
func redact(s, key string) string { return strings.ReplaceAll(s, key, "<real key>") }

// redactAuth says which key an Authorization header carried, never the
// key itself.
func redactAuth(auth, key string) string {
	switch auth {
	case "":
		return "no key"
	case "Bearer " + key:
		return "the real key"
	}
	return "another key"
}

// TestAppEnv: the app's literal environment is read, and a Secret
// anywhere in it is refused.
func TestAppEnv(t *testing.T) {
	for _, tc := range []struct {
		name, pod string
		want      map[string]string
		wantErr   bool
	}{
		{name: "literal values; the downward API is not a key",
			pod:  `{"spec":{"containers":[{"name":"dsh","env":[{"name":"NODE_IP","valueFrom":{"fieldRef":{"fieldPath":"status.hostIP"}}},{"name":"OPENAI_BASE_URL","value":"http://nodeproxy-egress.sandgate-node.svc:8090/openai"}]}]}}`,
			want: map[string]string{"OPENAI_BASE_URL": "http://nodeproxy-egress.sandgate-node.svc:8090/openai"}},
		{name: "a key from a Secret", wantErr: true,
			pod: `{"spec":{"containers":[{"name":"dsh","env":[{"name":"OPENAI_API_KEY","valueFrom":{"secretKeyRef":{"name":"dsh-provider-keys","key":"openai"}}}]}]}}`},
		{name: "the environment from a Secret", wantErr: true,
			pod: `{"spec":{"containers":[{"name":"dsh","envFrom":[{"secretRef":{"name":"dsh-provider-keys"}}]}]}}`},
		{name: "no containers", wantErr: true, pod: `{"spec":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p podSpec
			if err := json.Unmarshal([]byte(tc.pod), &p); err != nil {
				t.Fatal(err)
			}
			got, err := p.appEnv()
			if (err != nil) != tc.wantErr {
				t.Fatalf("appEnv() error = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !maps.Equal(got, tc.want) {
				t.Errorf("appEnv() = %v, want %v", got, tc.want)
			}
		})
	}
}

// agentAtWork has a's agent call the provider stand-in through the egress
// Service for longer than IDLE_TIMEOUT with no browser request, as an
// agent working on its own does, and fails if its sandbox is suspended
// meanwhile. It returns when the last call ended.
func (j *journey) agentAtWork(a account, p *providerStandin, d time.Duration) time.Time {
	j.t.Helper()
	pod := j.sandboxPod(a)
	c := j.attachProbe(clusterinstall.SandboxNamespace, pod)
	base := j.podEnv(pod, p.key)["OPENAI_BASE_URL"]
	start, last, calls := time.Now(), time.Time{}, 0
	pace := time.NewTicker(idleTimeout / 4)
	defer pace.Stop()
	for ; time.Since(start) < d; <-pace.C {
		out, err := j.kubectlWithin(30*time.Second, "-n", clusterinstall.SandboxNamespace, "exec", pod, "-c", c, "--",
			"timeout", "20", "wget", "-q", "-O", "-", "--header", "Content-Type: application/json",
			"--post-data", `{"model":"standin","messages":[{"role":"user","content":"go on"}]}`, base+"/chat/completions")
		if err != nil || !strings.Contains(out, standinAnswer) {
			j.t.Fatalf("%s's model call %d: %v %.300s", a.user, calls+1, err, out)
		}
		last, calls = time.Now(), calls+1
		if m := j.sandboxMode(a); m != "Running" {
			j.t.Fatalf("%s's sandbox is %s %v into its model calls (IDLE_TIMEOUT %v), want Running", a.user, m, time.Since(start).Round(time.Second), idleTimeout)
		}
	}
	j.t.Logf("%s's agent made %d model calls over %v with no browser request, and stayed Running", a.user, calls, last.Sub(start).Round(time.Second))
	return last
}
