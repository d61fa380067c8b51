package ssopreflight

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
)

// probeIdentity is the user the probe asserts.
const probeIdentity = "sandgate-preflight-probe"

// header checks that the auth API trusts an identity header, that the
// node proxies know the same header and keep it only with the SSO proxy's
// proof (AUTH_PROXY_SECRET_FILE; they strip it from every request without
// it), and trust no catch-all range and no node's address,
// and, with a ProbeURL,
// that an identity asserted in the header from here is not believed.
func (s *state) header(ctx context.Context) ([]string, error) {
	if len(s.authAPIs) == 0 {
		return []string{fmt.Sprintf("no Deployment or pod in %s is labelled %s: cannot find the auth API", s.o.AuthNamespace, s.o.AuthAPILabels)}, nil
	}
	var reasons []string
	authHeader := ""
	for _, sh := range s.authAPIs {
		env, err := s.settings(ctx, sh)
		if err != nil {
			return nil, err
		}
		h := env["AUTH_PROXY_HEADER"]
		if h == "" {
			reasons = append(reasons, fmt.Sprintf("%s has no AUTH_PROXY_HEADER: this is not the SSO variant", sh.what))
			continue
		}
		if authHeader != "" && !strings.EqualFold(h, authHeader) {
			reasons = append(reasons, fmt.Sprintf("%s trusts AUTH_PROXY_HEADER %q, another auth API trusts %q", sh.what, h, authHeader))
		}
		authHeader = h
	}
	for _, sh := range s.nodeProxies {
		env, err := s.settings(ctx, sh)
		if err != nil {
			return nil, err
		}
		if h := env["AUTH_PROXY_HEADER"]; authHeader != "" && !strings.EqualFold(h, authHeader) {
			reasons = append(reasons, fmt.Sprintf("%s has AUTH_PROXY_HEADER %q, but the auth API trusts %q: the node proxies pass a client's %s through", sh.what, h, authHeader, authHeader))
		}
		if authHeader != "" && env["AUTH_PROXY_SECRET_FILE"] == "" {
			reasons = append(reasons, fmt.Sprintf("%s has no AUTH_PROXY_SECRET_FILE: it believes %s from every peer in TRUSTED_PROXIES, by address, not by oauth2-proxy's proof", sh.what, authHeader))
		}
		for _, cidr := range strings.Split(env["TRUSTED_PROXIES"], ",") {
			p, err := netip.ParsePrefix(strings.TrimSpace(cidr))
			switch {
			case err != nil:
			case p.Bits() == 0:
				reasons = append(reasons, fmt.Sprintf("%s trusts every peer (TRUSTED_PROXIES has %s): none has the identity header stripped", sh.what, p))
			default:
				if host, ok := s.hostIn(p); ok {
					reasons = append(reasons, fmt.Sprintf("%s trusts %s (TRUSTED_PROXIES has %s), a node's address: every host-network process there can assert any user; trust the pod CIDR only (hops count by their proof)", sh.what, host, p))
				}
			}
		}
	}
	if s.o.ProbeURL != "" && authHeader != "" {
		if r := s.probe(ctx, authHeader); r != "" {
			reasons = append(reasons, r)
		}
	}
	return reasons, nil
}

// hostIn returns a node address in p: the host IP of a pod read, or an
// address of AllowedCIDRs (the node CIDR admitted to the node proxies).
func (s *state) hostIn(p netip.Prefix) (netip.Addr, bool) {
	for _, pod := range s.pods {
		if a, err := netip.ParseAddr(pod.Status.HostIP); err == nil && p.Contains(a) {
			return a, true
		}
	}
	for _, c := range s.o.AllowedCIDRs {
		if p.Overlaps(c) {
			return c.Addr(), true
		}
	}
	return netip.Addr{}, false
}

// probe asserts probeIdentity in header at ProbeURL, from here, twice,
// and reports the first answer that believed it: a login that succeeds,
// or a landing page that offers the identity's user (which tells even
// when no account exists for it). A node proxy that cannot be reached
// from here passes: the NetworkPolicy or the network keeps this host out.
func (s *state) probe(ctx context.Context, header string) string {
	status, cookies, body, err := s.send(ctx, http.MethodPost, "/login", header, "application/json")
	switch {
	case err != nil:
		return err.Error()
	case status == 0:
		return ""
	case status < 300 || cookies && status < 400:
		return fmt.Sprintf("a login from this host asserting %s: %s was answered %d: the identity header is not stripped from untrusted peers", header, probeIdentity, status)
	}
	user, _ := account.SSOUserName(probeIdentity)
	status, _, body, err = s.send(ctx, http.MethodGet, "/", header, "text/html")
	switch {
	case err != nil:
		return err.Error()
	case status != 0 && bytes.Contains(body, []byte(user)):
		return fmt.Sprintf("the landing page from this host asserting %s: %s offered its user %s: the identity header is not stripped from untrusted peers", header, probeIdentity, user)
	}
	return ""
}

// send sends method path to ProbeURL with probeIdentity in header and
// returns the answer's status (0 when the node proxy cannot be reached),
// whether it set cookies, and up to 256 KiB of its body.
func (s *state) send(ctx context.Context, method, path, header, accept string) (int, bool, []byte, error) {
	client := s.o.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(s.o.ProbeURL, "/")+path, body)
	if err != nil {
		return 0, false, nil, fmt.Errorf("probe %s: %w", s.o.ProbeURL, err)
	}
	req.Header.Set(header, probeIdentity)
	req.Header.Set("Accept", accept)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	var netErr net.Error
	switch {
	case errors.As(err, &netErr), errors.Is(err, context.DeadlineExceeded):
		return 0, false, nil, nil
	case err != nil:
		return 0, false, nil, fmt.Errorf("probe %s: %w", s.o.ProbeURL, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 256<<10))
	return resp.StatusCode, len(resp.Cookies()) > 0, data, nil
}

// settings resolves a pod shape's first container's environment as its
// command reads it: ConfigMaps from envFrom, then env, then --flag=value
// arguments.
func (s *state) settings(ctx context.Context, sh podShape) (map[string]string, error) {
	out := map[string]string{}
	if len(sh.spec.Containers) == 0 {
		return out, nil
	}
	c := sh.spec.Containers[0]
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		cm, err := s.o.Kube.CoreV1().ConfigMaps(sh.namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
		if err != nil {
			if from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
				continue
			}
			return nil, fmt.Errorf("read ConfigMap %s/%s of %s: %w", sh.namespace, from.ConfigMapRef.Name, sh.what, err)
		}
		for k, v := range cm.Data {
			out[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			out[e.Name] = e.Value
		}
	}
	for _, a := range append(append([]string(nil), c.Command...), c.Args...) {
		if name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "="); ok && strings.HasPrefix(a, "-") {
			out[strings.ToUpper(strings.ReplaceAll(name, "-", "_"))] = value
		}
	}
	return out, nil
}
