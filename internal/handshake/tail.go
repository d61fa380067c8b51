package handshake

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// tailChunk is how much of a plain file is read per backwards step.
const tailChunk = 64 << 10

// errGzipTooLarge marks a compressed file whose content exceeds the
// decompression cap; its tail cannot be told apart from its middle.
var errGzipTooLarge = errors.New("compressed log exceeds decompression cap")

// readTail returns the complete lines at the end of a file of the given
// size: at most maxLines lines and at most maxBytes bytes, each line ending
// in '\n'. It reads backwards in chunks and stops as soon as it has enough
// lines, so the file's size does not matter. A fragment cut by the byte cap
// and an unterminated last line (still being written) are dropped. read is
// the number of bytes read from f.
func readTail(f io.ReaderAt, size, maxBytes int64, maxLines int) (tail []byte, read int64, err error) {
	window := min(size, maxBytes)
	if window <= 0 || maxLines <= 0 {
		return nil, 0, nil
	}
	start := size - window
	buf := make([]byte, window)
	pos := window // buf[pos:] holds what has been read
	newlines := 0
	cut := -1 // index in buf just after the (maxLines+1)-th newline from the end
	for pos > 0 && cut < 0 {
		n := min(int64(tailChunk), pos)
		got, err := f.ReadAt(buf[pos-n:pos], start+pos-n)
		read += int64(got)
		if err != nil && !(errors.Is(err, io.EOF) && int64(got) == n) {
			if errors.Is(err, io.EOF) {
				// The file shrank under us (truncated by its writer);
				// what is left is not a consistent tail.
				return nil, read, nil
			}
			return nil, read, fmt.Errorf("read log tail: %w", err)
		}
		pos -= n
		chunk := buf[pos : pos+n]
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' {
				continue
			}
			newlines++
			if newlines == maxLines+1 {
				cut = int(pos) + i + 1
				break
			}
		}
	}
	return trimLines(buf, cut, start == 0), read, nil
}

// trimLines returns the complete lines of buf. cut, when not negative, is
// where the wanted lines begin; otherwise buf starts at the file's start
// (fromStart) or in the middle of a line that is dropped.
func trimLines(buf []byte, cut int, fromStart bool) []byte {
	end := bytes.LastIndexByte(buf, '\n') + 1
	switch {
	case cut >= 0:
	case fromStart:
		cut = 0
	default:
		cut = bytes.IndexByte(buf, '\n') + 1
	}
	if cut >= end {
		return nil
	}
	return buf[cut:end]
}

// readGzipTail decompresses r and keeps only the last window bytes in a
// ring, then returns their last maxLines complete lines. A gzip file cannot
// be read backwards, so its whole content is scanned; maxOut caps that scan
// and exceeding it yields errGzipTooLarge. out is the number of
// decompressed bytes scanned.
func readGzipTail(r io.Reader, window, maxOut int64, maxLines int) (tail []byte, out int64, err error) {
	if window <= 0 || maxLines <= 0 {
		return nil, 0, nil
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, 0, fmt.Errorf("open compressed log: %w", err)
	}
	defer zr.Close()

	ring := newTailRing(window)
	n, err := io.Copy(ring, io.LimitReader(zr, maxOut+1))
	if err != nil {
		return nil, n, fmt.Errorf("decompress log: %w", err)
	}
	if n > maxOut {
		return nil, n, errGzipTooLarge
	}
	buf := ring.bytes()
	return trimLines(buf, lineCut(buf, maxLines), n <= window), n, nil
}

// lineCut returns the index just after the (maxLines+1)-th newline from
// the end of buf, or -1 when buf holds no more than maxLines lines.
func lineCut(buf []byte, maxLines int) int {
	newlines := 0
	for i := len(buf) - 1; i >= 0; i-- {
		if buf[i] == '\n' {
			newlines++
			if newlines == maxLines+1 {
				return i + 1
			}
		}
	}
	return -1
}

// tailRing is an io.Writer that remembers the last len(buf) bytes written.
type tailRing struct {
	buf  []byte
	next int // where the next byte goes
	full bool
}

func newTailRing(size int64) *tailRing { return &tailRing{buf: make([]byte, size)} }

// Write never fails.
func (t *tailRing) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= len(t.buf) {
		copy(t.buf, p[len(p)-len(t.buf):])
		t.next, t.full = 0, true
		return n, nil
	}
	c := copy(t.buf[t.next:], p)
	if c < len(p) {
		copy(t.buf, p[c:])
		t.full = true
	}
	t.next = (t.next + len(p)) % len(t.buf)
	if t.next == 0 && len(p) > 0 {
		t.full = true
	}
	return n, nil
}

// bytes returns the remembered bytes, oldest first.
func (t *tailRing) bytes() []byte {
	if !t.full {
		return t.buf[:t.next]
	}
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.next:]...)
	return append(out, t.buf[:t.next]...)
}
