package clusterinstall

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// WaitServing waits until every entry in urls answers its landing page
// with 200 over TLS signed by the CA in caFile. A node proxy that its
// rollout reports Ready can still be out of reach at its NodePort until
// kube-proxy has programmed the new endpoint (externalTrafficPolicy
// Local), so a person or a test told "installed" must not find the entry
// refusing connections.
func WaitServing(ctx context.Context, urls []string, caFile string) error {
	cfg, err := EntriesTLS(caFile)
	if err != nil {
		return err
	}
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true},
		Timeout:   5 * time.Second,
	}
	defer client.CloseIdleConnections()
	for _, u := range urls {
		if err := waitLanding(ctx, client, u); err != nil {
			return err
		}
	}
	return nil
}

// EntriesTLS is a client's TLS configuration for the entries: it trusts
// the CA in caFile (Entries.CAFile), which signed their certificate.
func EntriesTLS(caFile string) (*tls.Config, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read the entries' CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// waitLanding asks for u until it answers 200 or ctx ends, and then
// returns the last answer it had before ctx ended.
func waitLanding(ctx context.Context, client *http.Client, u string) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		err := landing(ctx, client, u)
		if err == nil {
			return nil
		}
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("entry %s not serving: %w", u, last)
		case <-tick.C:
		}
	}
}

func landing(ctx context.Context, client *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/html")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return errors.New("answered " + resp.Status)
	}
	return nil
}
