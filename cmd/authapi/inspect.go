package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/accountpath/authapid"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/settings"
)

const inspectUsage = `Usage: authapi jwt inspect [flags] [TOKEN]

Decodes a session token and verifies it. TOKEN is the token, a raw cookie
value, "name=value" or a whole Cookie/Set-Cookie header; without TOKEN (or
with "-") it is read from standard input. Prints the header and claims as
JSON with a verdict: valid, expired, bad signature, unknown kid, invalid
claims, malformed, or revoked (only with --kubeconfig, which reads the
user's claim). Exits 0 only for a valid token, 1 otherwise, 2 on usage errors.

`

// inspect runs `authapi jwt inspect`.
func inspect(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	d := authapid.Defaults()
	for _, s := range d.Settings() { // the environment's names and values apply here too
		switch s.Env {
		case "ISSUER", "AUDIENCE", "NAMESPACE", "CLAIM_PREFIX", "COOKIE_MAX_AGE":
			if v := getenv(s.Env); v != "" {
				_ = s.Value.Set(v)
			}
		}
	}
	fs := flag.NewFlagSet("authapi jwt inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jwksURL := fs.String("jwks-url", "", "fetch the public keys from this JWKS URL (e.g. http://authapi:8080/.well-known/jwks.json)")
	keyFile := fs.String("key-file", "", "read the keys from a file: a JWKS, or the signing-keys.json of the signing Secret")
	kubeconfig := fs.String("kubeconfig", "", "check revocation on the user's claim with this kubeconfig")
	fs.StringVar(&d.Namespace, "namespace", d.Namespace, "namespace of the claims [NAMESPACE]")
	fs.StringVar(&d.ClaimPrefix, "claim-prefix", d.ClaimPrefix, "claim name prefix [CLAIM_PREFIX]")
	fs.StringVar(&d.Issuer, "issuer", d.Issuer, "expected iss [ISSUER]")
	fs.StringVar(&d.Audience, "audience", d.Audience, "expected aud [AUDIENCE]")
	fs.Var(settings.Duration(&d.CookieMaxAge), "cookie-max-age", "session length, to tell whether an expired token is renewable [COOKIE_MAX_AGE]")
	fs.Usage = func() {
		fmt.Fprint(stderr, inspectUsage)
		fs.VisitAll(func(f *flag.Flag) {
			fmt.Fprintf(stderr, "  --%s\n        %s", f.Name, f.Usage)
			if f.DefValue != "" {
				fmt.Fprintf(stderr, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(stderr)
		})
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if (*jwksURL == "") == (*keyFile == "") || fs.NArg() > 1 {
		fmt.Fprintln(stderr, "authapi jwt inspect: give exactly one of --jwks-url and --key-file, and at most one TOKEN")
		return 2
	}
	raw := fs.Arg(0)
	if raw == "" || raw == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
		if err != nil {
			fmt.Fprintln(stderr, "authapi jwt inspect: read token:", err)
			return 2
		}
		raw = string(b)
	}
	keys, err := loadKeys(ctx, *jwksURL, *keyFile)
	if err != nil {
		fmt.Fprintln(stderr, "authapi jwt inspect:", err)
		return 2
	}
	o := authapi.InspectOptions{Keys: keys, Issuer: d.Issuer, Audience: d.Audience, ClaimPrefix: d.ClaimPrefix, CookieMaxAge: d.CookieMaxAge}
	if *kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err != nil {
			fmt.Fprintln(stderr, "authapi jwt inspect: load kubeconfig:", err)
			return 2
		}
		sb, err := sandboxapi.NewForConfig(cfg)
		if err != nil {
			fmt.Fprintln(stderr, "authapi jwt inspect:", err)
			return 2
		}
		o.Claims = sb.SandboxClaims(d.Namespace)
	}
	ictx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	rep := authapi.Inspect(ictx, raw, o)
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(rep)
	if !rep.Valid() {
		return 1
	}
	return 0
}

// loadKeys reads a JWKS from a URL or a file, or a key ring from a file.
func loadKeys(ctx context.Context, url, file string) (jwt.KeySource, error) {
	var data []byte
	if url != "" {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, fmt.Errorf("jwks url: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fetch jwks: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetch jwks: status %d", resp.StatusCode)
		}
		if data, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20)); err != nil {
			return nil, fmt.Errorf("read jwks: %w", err)
		}
		return jwt.ParseJWKS(data)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	if set, jerr := jwt.ParseJWKS(data); jerr == nil {
		return set, nil
	} else if ring, rerr := jwt.UnmarshalKeyRing(data); rerr == nil {
		return ring, nil
	} else {
		return nil, fmt.Errorf("key file is neither a JWKS (%v) nor a key ring (%v)", jerr, strings.SplitN(rerr.Error(), "\n", 2)[0])
	}
}
