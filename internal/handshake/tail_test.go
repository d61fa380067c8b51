package handshake

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// countingReaderAt counts bytes served by ReadAt.
type countingReaderAt struct {
	r *bytes.Reader
	n int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

func numberedLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %04d\n", i)
	}
	return b.String()
}

func TestReadTail(t *testing.T) {
	ten := numberedLines(10) // 10 lines of 10 bytes
	tests := []struct {
		name     string
		data     string
		maxBytes int64
		maxLines int
		want     string
	}{
		{"all", ten, 1 << 20, 100, ten},
		{"last lines", ten, 1 << 20, 3, ten[70:]},
		{"byte cap drops cut line", ten, 25, 100, ten[80:]},
		// A line is kept only when the newline before it is inside the
		// window, so a window starting exactly on a boundary loses one.
		{"byte cap on boundary", ten, 30, 100, ten[80:]},
		{"byte cap one past boundary", ten, 31, 100, ten[70:]},
		{"unterminated last line dropped", ten + "line 0010", 1 << 20, 2, ten[80:]},
		{"only fragment", "no newline at all", 1 << 20, 5, ""},
		{"empty", "", 1 << 20, 5, ""},
		{"zero lines", ten, 1 << 20, 0, ""},
		{"blank lines count", "a\n\n\nb\n", 1 << 20, 2, "\nb\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &countingReaderAt{r: bytes.NewReader([]byte(tc.data))}
			got, n, err := readTail(r, int64(len(tc.data)), tc.maxBytes, tc.maxLines)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if n != r.n || n > tc.maxBytes {
				t.Errorf("reported %d bytes read, reader served %d, cap %d", n, r.n, tc.maxBytes)
			}
		})
	}
}

func TestReadTailStopsAtEnoughLines(t *testing.T) {
	data := numberedLines(100_000) // ~1 MB
	r := &countingReaderAt{r: bytes.NewReader([]byte(data))}
	got, n, err := readTail(r, int64(len(data)), 1<<30, 5)
	if err != nil {
		t.Fatal(err)
	}
	if want := "line 99995\nline 99996\nline 99997\nline 99998\nline 99999\n"; string(got) != want {
		t.Errorf("got %q", got)
	}
	if n > tailChunk {
		t.Errorf("read %d bytes for 5 lines, want at most one chunk (%d)", n, tailChunk)
	}
}

func TestReadTailShrunkFile(t *testing.T) {
	// The writer truncated the file after it was stat'ed.
	r := bytes.NewReader([]byte("short\n"))
	got, _, err := readTail(r, 1000, 1<<20, 10)
	if err != nil || got != nil {
		t.Fatalf("got %q, %v; want nothing and no error", got, err)
	}
}

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadGzipTail(t *testing.T) {
	ten := numberedLines(10)
	tests := []struct {
		name     string
		data     string
		window   int64
		maxOut   int64
		maxLines int
		want     string
		err      error
	}{
		{"all", ten, 1 << 20, 1 << 20, 100, ten, nil},
		{"last lines", ten, 1 << 20, 1 << 20, 2, ten[80:], nil},
		{"window drops cut line", ten, 25, 1 << 20, 100, ten[80:], nil},
		{"window equals content", ten, 100, 1 << 20, 100, ten, nil},
		{"too large", ten, 1 << 20, 99, 100, "", errGzipTooLarge},
		{"exactly the cap", ten, 1 << 20, 100, 100, ten, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := readGzipTail(bytes.NewReader(gz(t, tc.data)), tc.window, tc.maxOut, tc.maxLines)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if _, _, err := readGzipTail(strings.NewReader("not gzip"), 10, 10, 1); err == nil {
		t.Error("garbage accepted as gzip")
	}
}

func TestTailRing(t *testing.T) {
	data := []byte("0123456789abcdefghij")
	for size := 1; size <= 8; size++ {
		for step := 1; step <= 25; step++ {
			r := newTailRing(int64(size))
			for i := 0; i < len(data); i += step {
				r.Write(data[i:min(i+step, len(data))])
			}
			if got, want := string(r.bytes()), string(data[len(data)-size:]); got != want {
				t.Fatalf("size %d step %d: got %q, want %q", size, step, got, want)
			}
		}
	}
	r := newTailRing(8)
	r.Write([]byte("abc"))
	if got := string(r.bytes()); got != "abc" {
		t.Fatalf("partly filled ring: got %q", got)
	}
}
