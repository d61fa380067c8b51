package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// traefikSpec configures the traefik role: the binary make bench built
// (tools/traefik), the app it routes to and a path of the app that
// answers 200, to tell when Traefik routes.
type traefikSpec struct {
	Binary string `json:"binary"`
	App    string `json:"app"`
	Probe  string `json:"probe"`
}

// traefikRoutes is Traefik's file-provider configuration for way (e): as
// the bare proxy (d) does, /u/<user>/<rest> goes to the app as /<rest>
// with the client's Host, and nothing more (no middleware but the strip,
// no access log, no metrics).
const traefikRoutes = `http:
  routers:
    users:
      entryPoints: [web]
      rule: "PathPrefix(` + "`/u/`" + `)"
      middlewares: [strip-user]
      service: app
  middlewares:
    strip-user:
      stripPrefixRegex:
        regex: ["^/u/[a-z0-9-]+"]
  services:
    app:
      loadBalancer:
        passHostHeader: true
        servers:
          - url: "http://%s"
`

// serveTraefik runs Traefik in front of s.App on a loopback port, in this
// role's process group and pinning (its child inherits both), and reports
// Traefik's own pid, whose CPU the bench measures, once it routes a
// request. Closing stdin stops it.
func serveTraefik(ctx context.Context, s traefikSpec) error {
	dir, err := os.MkdirTemp("", "sandgate-bench-traefik-")
	if err != nil {
		return fmt.Errorf("make Traefik's directory: %w", err)
	}
	defer os.RemoveAll(dir)
	routes := filepath.Join(dir, "routes.yaml")
	if err := os.WriteFile(routes, fmt.Appendf(nil, traefikRoutes, s.App), 0o600); err != nil {
		return fmt.Errorf("write Traefik's routes: %w", err)
	}
	addr, err := freeLoopback()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, s.Binary,
		"--entryPoints.web.address="+addr,
		"--entryPoints.web.transport.lifeCycle.graceTimeOut=1s",
		"--providers.file.filename="+routes,
		"--log.level=ERROR",
		"--global.checkNewVersion=false",
		"--global.sendAnonymousUsage=false",
	)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start Traefik: %w", err)
	}
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		return cmd.Wait()
	}
	if err := awaitRoute(ctx, "http://"+addr+"/u/"+userLocal+s.Probe, 30*time.Second); err != nil {
		_ = stop()
		return err
	}
	if err := emit(served{Addr: addr, Pid: cmd.Process.Pid}); err != nil {
		_ = stop()
		return err
	}
	waitParent()
	if err := stop(); err != nil && !isSignalled(err) {
		return fmt.Errorf("Traefik: %w", err)
	}
	return nil
}

// freeLoopback picks a free loopback port for a server this process
// does not listen for itself.
func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// awaitRoute waits until url, through Traefik, gets the app's 200: before
// Traefik has loaded its routes it answers 404.
func awaitRoute(ctx context.Context, url string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Traefik routed no request to the app (%s) within %s", url, limit)
		case <-tick.C:
		}
	}
}

// isSignalled reports an exit by the signal that stop sent.
func isSignalled(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}
