package browsertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxyd"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// awaitExpiry waits until the node proxies refuse as expired every session
// cookie the browser holds now for the main origin and user's agent: a
// verifier with the auth API's keys and the node proxies' issuer,
// audiences and leeway says so of each.
func (s *session) awaitExpiry(ctx context.Context, user string) error {
	verifiers, err := s.p.sessionVerifiers(ctx)
	if err != nil {
		return err
	}
	cookie := make(map[string]string) // token -> cookie name
	for _, u := range []string{s.url("/"), s.p.agentURL(user, "")} {
		jar, err := cookiesOf(ctx, u)
		if err != nil {
			return err
		}
		for name, c := range jar {
			if verifiers[name] != nil {
				cookie[c.Value] = name
			}
		}
	}
	if len(cookie) == 0 {
		return fmt.Errorf("%w: no session cookie in the browser", errUnexpected)
	}
	last := "not checked"
	expired := testkit.Poll(ctx, agentTimeout, func() bool {
		for token, name := range cookie {
			_, err := verifiers[name].Verify(token)
			if !errors.Is(err, jwt.ErrExpired) {
				last = fmt.Sprintf("%s: %v", name, err)
				return false
			}
		}
		return true
	})
	if !expired {
		return fmt.Errorf("%w: sessions not expired (last: %s)", errUnexpected, last)
	}
	return nil
}

// sessionVerifiers are the node proxies' verifiers by the cookie they
// check: the session cookie and the origin session, with the auth API's
// current keys.
func (p *platform) sessionVerifiers(ctx context.Context) (map[string]*jwt.Verifier, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.authURL+"/.well-known/jwks.json", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get the auth API's JWKS: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read the auth API's JWKS: %w", err)
	}
	keys, err := jwt.ParseJWKS(body)
	if err != nil {
		return nil, err
	}
	c := nodeproxyd.Defaults()
	verifiers := make(map[string]*jwt.Verifier)
	for name, aud := range map[string]string{nodeproxy.DefaultCookieName: c.Audience, nodeproxy.DefaultOriginCookieName: jwt.OriginAudience(c.Audience)} {
		v, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: keys, Issuer: c.Issuer, Audience: aud, Leeway: nodeproxyd.SessionLeeway})
		if err != nil {
			return nil, err
		}
		verifiers[name] = v
	}
	return verifiers, nil
}
