package handshake

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxTokenFileBytes bounds the token file: one token and a newline.
const maxTokenFileBytes = 4 << 10

// fileReader reads the launch token an app writes into a volume of its
// pod, from the kubelet's pod directory on this node:
//
//	<pods root>/<pod uid>/<path>, e.g.
//	/var/lib/kubelet/pods/<uid>/volumes/kubernetes.io~empty-dir/dsh-token/token
//
// The app, which is not trusted, controls the volume's content, so it is
// read with the care the logs get: no component may be a symlink, the file
// must be a regular file that no other user may write (its writer is the
// app alone), and it is read with a size cap.
type fileReader struct {
	root *os.Root
	dirs []string // the path's directories below the pod directory
	name string   // the file's name
}

// newFileReader reads path (validated, see validTokenFilePath) under root.
func newFileReader(root *os.Root, path string) *fileReader {
	parts := strings.Split(path, "/")
	return &fileReader{root: root, dirs: parts[:len(parts)-1], name: parts[len(parts)-1]}
}

// read returns the token in pod uid's token file and the bytes read.
func (r *fileReader) read(uid string) (string, int64, error) {
	if !isUUID(uid) {
		return "", 0, fmt.Errorf("%w: pod uid", ErrInvalidRef)
	}
	dir, err := openDir(r.root, uid, r.dirs...)
	if err != nil {
		return "", 0, classifyFileErr(err, "open token file directory")
	}
	defer dir.Close()
	f, fi, err := openRegular(dir, r.name)
	if err != nil {
		return "", 0, classifyFileErr(err, "open token file")
	}
	defer f.Close()
	if fi.Mode().Perm()&0o002 != 0 {
		return "", 0, fmt.Errorf("%w: token file is writable by any user", ErrUnsafePath)
	}
	if fi.Size() > maxTokenFileBytes {
		return "", 0, fmt.Errorf("%w: token file is %d bytes, more than %d", ErrNoToken, fi.Size(), maxTokenFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes+1))
	n := int64(len(data))
	if err != nil {
		return "", n, fmt.Errorf("read token file: %w", err)
	}
	tok, ok := parseTokenFile(data)
	if !ok {
		return "", n, fmt.Errorf("%w: the token file holds no valid token", ErrNoToken)
	}
	return tok, n, nil
}

// parseTokenFile returns the one token in a token file's content: surrounding
// white space (a trailing newline) is dropped, and the rest must be a
// plausible token with no white space or control characters inside.
func parseTokenFile(data []byte) (string, bool) {
	if len(data) > maxTokenFileBytes {
		return "", false
	}
	tok := bytes.TrimSpace(data)
	if !validToken(tok) {
		return "", false
	}
	return string(tok), true
}

// validTokenFilePath reports whether p can name a file below a pod
// directory: relative, clean, no "..", no empty or "." component.
func validTokenFilePath(p string) bool {
	return filepath.IsLocal(p) && filepath.Clean(p) == p && p != "." && !strings.ContainsRune(p, 0)
}

// classifyFileErr maps a failed open or stat of the token file: a missing
// directory or file means the app has not written its token (yet).
func classifyFileErr(err error, what string) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: not found", ErrNoToken, what)
	}
	return fmt.Errorf("%s: %w", what, err)
}
