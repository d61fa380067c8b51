package ssojourney

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandgate/sandgate/internal/clustertools/ssopreflight/preflighttest"
)

// preflightRun is one run of cmd/sandgate-preflight.
type preflightRun struct {
	code           int
	stdout, stderr string
}

// fails returns its FAIL lines.
func (r preflightRun) fails() []string {
	var out []string
	for line := range strings.Lines(r.stdout) {
		if strings.HasPrefix(line, "FAIL ") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// preflight applies the SSO variant's objects the preflight reads to the
// journey's API server, in namespaces of their own (node proxies in
// <ns>-pf-node, oauth2-proxy and the auth API in <ns>-pf-sso), after
// change, and runs the shipped preflight against them with --probe-url at
// probe, a node proxy of the journey.
func (p *ssoPlatform) preflight(t *testing.T, probe string, change func(objs []*unstructured.Unstructured)) preflightRun {
	t.Helper()
	names := map[string]string{"sandgate-node": p.sim.NS + "-pf-node", "sandgate": p.sim.NS + "-pf-sso"}
	objs, err := preflighttest.Renamed(p.variant, names)
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(objs)
	}
	if err := preflighttest.Apply(t.Context(), p.cp.AdminConfig(), []string{names["sandgate-node"], names["sandgate"]}, objs); err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--kubeconfig=" + p.adminKubeconfig,
		"--node-namespace=" + names["sandgate-node"], "--proxy-namespace=" + names["sandgate"], "--auth-namespace=" + names["sandgate"],
		"--probe-url=http://" + probe,
	}
	cmd := exec.CommandContext(t.Context(), p.preflightBin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	run := preflightRun{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run sandgate-preflight: %v", err)
	}
	return run
}

// relay forwards each connection to a node proxy from 127.0.0.9, outside
// the node proxies' TRUSTED_PROXIES: a stand-in for a host that reaches a
// node proxy without oauth2-proxy (the preflight itself connects from
// 127.0.0.1, which is oauth2-proxy's address here).
type relay struct {
	addr      string
	forwarded atomic.Int32 // connections that reached the node proxy
}

// untrustedPeer starts a relay to node on loopback; it stops when t ends.
func untrustedPeer(t *testing.T, node string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9)}}
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer in.Close()
				out, err := d.DialContext(t.Context(), "tcp", node)
				if err != nil {
					return
				}
				defer out.Close()
				r.forwarded.Add(1)
				go func() {
					_, _ = io.Copy(out, in)
					_ = out.(*net.TCPConn).CloseWrite()
				}()
				_, _ = io.Copy(in, out)
			})
		}
	})
	return r
}
