package handshake

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Test pod identity, valid under names.go's rules.
const (
	testNS        = "tenants"
	testPod       = "dsh-pool-x7k2p"
	testUID       = "0b6e2a5c-3f1d-4e8a-9c7b-1a2b3c4d5e6f"
	testContainer = "dsh"
)

// testToken returns a deterministic 43-character base64url launch token.
func testToken(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// launchLine is the agent app's launch line for tok.
func launchLine(tok string) string {
	return "dsh web: listening on http://0.0.0.0:3080/?token=" + tok
}

// crier formats CRI records with increasing timestamps.
type crier struct{ t time.Time }

func newCrier() *crier { return &crier{t: time.Date(2026, 8, 1, 12, 0, 0, 123456789, time.UTC)} }

// rec returns one CRI record line (with '\n'): stream "stdout"/"stderr",
// tag "F"/"P".
func (c *crier) rec(stream, tag, text string) string {
	c.t = c.t.Add(1500 * time.Microsecond)
	return fmt.Sprintf("%s %s %s %s\n", c.t.Format(time.RFC3339Nano), stream, tag, text)
}

// out returns one full stdout record.
func (c *crier) out(text string) string { return c.rec("stdout", "F", text) }

// podLogs builds a container log directory under a fresh log root.
type podLogs struct {
	t    *testing.T
	root string
	dir  string
}

func newPodLogs(t *testing.T) *podLogs {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, testNS+"_"+testPod+"_"+testUID, testContainer)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &podLogs{t: t, root: root, dir: dir}
}

func (p *podLogs) write(name string, lines ...string) string {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		p.t.Fatal(err)
	}
	return path
}

func (p *podLogs) writeGzip(name string, lines ...string) string {
	p.t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(strings.Join(lines, ""))); err != nil {
		p.t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		p.t.Fatal(err)
	}
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		p.t.Fatal(err)
	}
	return path
}

func testRef() logRef {
	return logRef{namespace: testNS, pod: testPod, uid: testUID, container: testContainer}
}

// newTestReader opens root with small but sufficient limits.
func newTestReader(t *testing.T, root string, limits readerLimits) *logReader {
	t.Helper()
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if limits == (readerLimits{}) {
		limits = readerLimits{maxLines: 1000, maxFileBytes: 1 << 20, maxTotalBytes: 4 << 20, maxGzipBytes: 16 << 20}
	}
	return &logReader{root: r, limits: limits}
}

// lineStrings converts reader output for comparisons.
func lineStrings(lines []logLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l.text)
	}
	return out
}

// testTarget is a valid Target for the test pod at addr.
func testTarget(addr string) Target {
	return Target{
		User:           "bob",
		Namespace:      testNS,
		Pod:            testPod,
		PodUID:         testUID,
		Container:      testContainer,
		Addr:           addr,
		Host:           "gw.example.com",
		ForwardedFor:   "203.0.113.7",
		ForwardedProto: "https",
		ForwardedHost:  "gw.example.com",
	}
}
