package egress

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// ErrNoKey means neither the user's nor the shared key file of a provider
// exists or holds a usable key.
var ErrNoKey = errors.New("no provider key")

// keyStore reads provider keys from the mounted Secret's directory, never
// through the API server: <dir>/<key>.<user> wins over <dir>/<key>.
type keyStore struct {
	dir   string
	files *fileCache
}

// key returns the key for user at provider p and whether it is the user's
// own.
func (k *keyStore) key(p *Provider, user string) ([]byte, bool, error) {
	for _, own := range []bool{true, false} {
		name := p.Key
		if own {
			name += "." + user
		}
		data, err := k.files.read(filepath.Join(k.dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("read key %s: %w", name, err)
		}
		key := bytes.TrimSpace(data)
		if len(key) == 0 || bytes.ContainsAny(key, "\r\n\x00") {
			return nil, false, fmt.Errorf("%w: key %s is empty or spans lines", ErrNoKey, name)
		}
		return key, own, nil
	}
	return nil, false, fmt.Errorf("%w: %s", ErrNoKey, p.Key)
}
