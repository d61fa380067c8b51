package clusterinstall

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// TestHopKeyKeptAcrossInstalls: the hop key is 32 random bytes (hex), and
// a second Install into the same directory keeps it, so node proxies that
// started before and after agree.
func TestHopKeyKeptAcrossInstalls(t *testing.T) {
	dir := t.TempDir()
	read := func() string {
		data, err := os.ReadFile(filepath.Join(dir, hopKeyFile))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if err := writeHopKey(dir); err != nil {
		t.Fatal(err)
	}
	first := read()
	if key, err := hex.DecodeString(first); err != nil || len(key) != 32 {
		t.Fatalf("hop key %d hex characters (%v), want 32 bytes", len(first), err)
	}
	if err := writeHopKey(dir); err != nil {
		t.Fatal(err)
	}
	if read() != first {
		t.Error("a second install replaced the hop key")
	}
	other := t.TempDir()
	if err := writeHopKey(other); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(other, hopKeyFile)); string(data) == first {
		t.Error("two clusters got the same hop key")
	}
}
