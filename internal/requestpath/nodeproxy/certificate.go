package nodeproxy

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/sandgate/sandgate/internal/defaults"
)

// DefaultCertCheckInterval is how often at most a Certificate looks at its
// files again.
const DefaultCertCheckInterval = 5 * time.Second

// CertificateOptions configures a Certificate.
type CertificateOptions struct {
	// CertFile and KeyFile are a PEM certificate chain and its private
	// key, such as a kubernetes.io/tls Secret's tls.crt and tls.key.
	// Required.
	CertFile, KeyFile string
	// CheckInterval is how often at most the files are looked at again
	// (on a handshake); zero means DefaultCertCheckInterval.
	CheckInterval time.Duration
	// Logger receives reloads and failed reads; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Certificate serves a certificate pair from files and picks up new files
// without a restart, as the kubelet writes them when a mounted Secret
// changes: a handshake at least CheckInterval after the last look stats
// both files, and reloads the pair when either changed (another file,
// size or modification time). A pair that fails to load is logged and the
// last good one stays in use. It is safe for concurrent use.
type Certificate struct {
	o   CertificateOptions
	log *slog.Logger

	mu        sync.Mutex
	cert      *tls.Certificate
	seen      [2]os.FileInfo // the files as last looked at, loaded or not
	lastCheck time.Time
}

// NewCertificate loads the pair once; an unreadable file or a key that
// does not match the certificate is an error.
func NewCertificate(o CertificateOptions) (*Certificate, error) {
	if o.CertFile == "" || o.KeyFile == "" {
		return nil, fmt.Errorf("nodeproxy: certificate and key file are both required")
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = DefaultCertCheckInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	defaults.Clock(&o.Now)
	c := &Certificate{o: o, log: o.Logger.With("component", "tls", "cert_file", o.CertFile, "key_file", o.KeyFile)}
	seen, err := c.stat()
	if err != nil {
		return nil, err
	}
	cert, err := LoadCertificate(o.CertFile, o.KeyFile)
	if err != nil {
		return nil, err
	}
	c.cert, c.seen, c.lastCheck = cert, seen, o.Now()
	c.log.Info("certificate loaded", certAttrs(cert)...)
	return c, nil
}

// LoadCertificate reads and checks a PEM certificate chain and its key.
func LoadCertificate(certFile, keyFile string) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load certificate %s with key %s: %w", certFile, keyFile, err)
	}
	return &cert, nil
}

// GetCertificate is tls.Config's GetCertificate: the current pair, looked
// at again once CheckInterval has passed.
func (c *Certificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.o.Now(); now.Sub(c.lastCheck) >= c.o.CheckInterval {
		c.lastCheck = now
		c.reloadLocked()
	}
	return c.cert, nil
}

// TLSConfig is a server configuration that serves this certificate.
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.GetCertificate}
}

// reloadLocked loads the pair again if either file changed since the last
// look. A failed load is remembered with the files as they were, so it is
// logged once per change rather than on every handshake.
func (c *Certificate) reloadLocked() {
	seen, err := c.stat()
	if err != nil {
		if c.seen[0] != nil {
			c.log.Warn("certificate files unreadable; keeping the loaded certificate", "err", err)
		}
		c.seen = [2]os.FileInfo{}
		return
	}
	if sameFile(c.seen[0], seen[0]) && sameFile(c.seen[1], seen[1]) {
		return
	}
	c.seen = seen
	cert, err := LoadCertificate(c.o.CertFile, c.o.KeyFile)
	if err != nil {
		c.log.Warn("certificate files changed but do not load; keeping the loaded certificate", "err", err)
		return
	}
	c.cert = cert
	c.log.Info("certificate reloaded", certAttrs(cert)...)
}

// stat looks at the files before they are read, so a change in between is
// seen at the next check.
func (c *Certificate) stat() ([2]os.FileInfo, error) {
	var out [2]os.FileInfo
	for i, name := range []string{c.o.CertFile, c.o.KeyFile} {
		fi, err := os.Stat(name)
		if err != nil {
			return out, fmt.Errorf("look at certificate files: %w", err)
		}
		out[i] = fi
	}
	return out, nil
}

// sameFile reports whether b is a as it was: the same file, size and
// modification time.
func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// certAttrs describe a certificate for the log: names and expiry, nothing
// secret.
func certAttrs(cert *tls.Certificate) []any {
	leaf := cert.Leaf // tls.LoadX509KeyPair fills it
	if leaf == nil {
		return nil
	}
	return []any{"subject", leaf.Subject.String(), "dns_names", leaf.DNSNames, "ip_addresses", leaf.IPAddresses,
		"not_after", leaf.NotAfter.UTC().Format(time.RFC3339)}
}
