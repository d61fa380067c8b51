// Package podlogs plays the kubelet and the agent app's launch for the
// bench's many-users run: it writes each pod's container log in CRI format
// under a log root, with the app's launch line among request-log lines,
// so that the node proxy's real handshaker (internal/handshake) finds the
// launch token as it would on a node. The bench apps accept exactly the
// tokens written here, through Exchange.
package podlogs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// CookieName is the auth cookie the bench apps set for a launch token; it
// has the handshaker's default prefix.
const CookieName = "dsh-auth-bench"

// tokenPrefix marks the bench's launch tokens.
const tokenPrefix = "bench-launch-"

// Token is the launch token pod's app prints.
func Token(pod string) string {
	h := sha256.Sum256([]byte(pod))
	return tokenPrefix + hex.EncodeToString(h[:16])
}

// Exchange is the app's side of the token exchange: for a launch token
// Token made, the Set-Cookie value to answer with; ok is false for any
// other token (the app answers 401).
func Exchange(token string) (setCookie string, ok bool) {
	if !strings.HasPrefix(token, tokenPrefix) || len(token) != len(tokenPrefix)+32 {
		return "", false
	}
	return CookieName + "=" + token[len(tokenPrefix):] + "; Path=/; HttpOnly", true
}

// Pod locates one pod's container log.
type Pod struct {
	Namespace, Name, UID, Container string
	// Addr is where the app listens, as its launch line says.
	Addr string
}

// Write writes p's current log, <root>/<ns>_<pod>_<uid>/<container>/0.log,
// as containerd does: before lines of the app's request log, the launch
// line, then after more request-log lines, each a CRI record on stdout.
func Write(root string, p Pod, before, after int) error {
	dir := filepath.Join(root, p.Namespace+"_"+p.Name+"_"+p.UID, p.Container)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create container log dir: %w", err)
	}
	var b strings.Builder
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	line := func(text string) {
		at = at.Add(time.Millisecond)
		fmt.Fprintf(&b, "%s stdout F %s\n", at.Format(time.RFC3339Nano), text)
	}
	for i := range before {
		line(fmt.Sprintf("dsh web: GET /static/app-%d.js 200", i))
	}
	line(fmt.Sprintf("dsh web: listening on http://%s/?token=%s", p.Addr, Token(p.Name)))
	for i := range after {
		line(fmt.Sprintf("dsh web: GET /api/messages?page=%d 200", i))
	}
	if err := os.WriteFile(filepath.Join(dir, "0.log"), []byte(b.String()), 0o640); err != nil {
		return fmt.Errorf("write container log: %w", err)
	}
	return nil
}
