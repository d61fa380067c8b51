package kubelet

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Stream names and tags of the CRI log format,
//
//	<RFC3339Nano time> <stdout|stderr> <P|F> <text>
//
// P marks a record whose line continues in the next record of the same
// stream, F the last (or only) record of a line.
const (
	streamStdout = "stdout"
	streamStderr = "stderr"
	tagPartial   = "P"
	tagFull      = "F"
)

// rotationStamp is the kubelet's suffix format for rotated files:
// <restart>.log.<stamp>, with .gz appended once compressed.
const rotationStamp = "20060102-150405"

// criLogOptions configures one container's log.
type criLogOptions struct {
	dir      string // <root>/<ns>_<pod>_<uid>/<container>
	restart  int    // names the current file <restart>.log
	maxSize  int64  // rotate once the file would grow past this
	maxFiles int    // current plus rotated files kept for this restart
	maxLine  int    // text bytes per record; longer lines become P records
	now      func() time.Time
}

// criLog writes a container's stdout and stderr to <restart>.log in CRI
// format, the way containerd does, and rotates it by size the way the
// kubelet does: the full file is renamed <restart>.log.<stamp>, older
// rotated files are gzipped, and files beyond maxFiles are removed. All
// writes share one lock, so records of both streams never interleave
// within a line of the file.
type criLog struct {
	opts criLogOptions

	mu      sync.Mutex
	f       *os.File
	size    int64
	pending [2][]byte // unfinished line per stream
	closed  bool
}

// openCRILog creates the directory and the current log file.
func openCRILog(opts criLogOptions) (*criLog, error) {
	if err := os.MkdirAll(opts.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create container log dir: %w", err)
	}
	l := &criLog{opts: opts}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *criLog) path() string {
	return filepath.Join(l.opts.dir, strconv.Itoa(l.opts.restart)+".log")
}

func (l *criLog) open() error {
	f, err := os.OpenFile(l.path(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("open container log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat container log: %w", err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Stdout returns the writer for the container's standard output.
func (l *criLog) Stdout() io.Writer { return streamWriter{l, 0} }

// Stderr returns the writer for the container's standard error.
func (l *criLog) Stderr() io.Writer { return streamWriter{l, 1} }

// streamWriter feeds one stream of a criLog.
type streamWriter struct {
	l *criLog
	s int
}

// Write appends p to the stream: complete lines become records at once,
// a trailing partial line waits for its newline (or for maxLine bytes).
func (w streamWriter) Write(p []byte) (int, error) {
	if err := w.l.write(w.s, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func streamName(s int) string {
	if s == 0 {
		return streamStdout
	}
	return streamStderr
}

func (l *criLog) write(s int, p []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return os.ErrClosed
	}
	buf := append(l.pending[s], p...)
	for {
		line, rest, ok := bytes.Cut(buf, []byte{'\n'})
		if !ok {
			break
		}
		if err := l.writeLine(s, line); err != nil {
			return err
		}
		buf = rest
	}
	// An unfinished line longer than a record goes out as P records now,
	// like containerd's fixed-size read buffer does.
	for len(buf) > l.opts.maxLine {
		if err := l.record(s, tagPartial, buf[:l.opts.maxLine]); err != nil {
			return err
		}
		buf = buf[l.opts.maxLine:]
	}
	l.pending[s] = append(l.pending[s][:0], buf...)
	return nil
}

// writeLine writes one line as P records of maxLine bytes and a final F
// record.
func (l *criLog) writeLine(s int, line []byte) error {
	for len(line) > l.opts.maxLine {
		if err := l.record(s, tagPartial, line[:l.opts.maxLine]); err != nil {
			return err
		}
		line = line[l.opts.maxLine:]
	}
	return l.record(s, tagFull, line)
}

// record writes one CRI line, rotating first when it would not fit.
func (l *criLog) record(s int, tag string, text []byte) error {
	now := l.opts.now()
	rec := make([]byte, 0, len(text)+48)
	rec = now.AppendFormat(rec, time.RFC3339Nano)
	rec = append(rec, ' ')
	rec = append(rec, streamName(s)...)
	rec = append(rec, ' ')
	rec = append(rec, tag...)
	rec = append(rec, ' ')
	rec = append(rec, text...)
	rec = append(rec, '\n')
	if l.size > 0 && l.size+int64(len(rec)) > l.opts.maxSize {
		if err := l.rotate(now); err != nil {
			return err
		}
	}
	n, err := l.f.Write(rec)
	l.size += int64(n)
	if err != nil {
		return fmt.Errorf("write container log: %w", err)
	}
	return nil
}

// rotate renames the current file to <restart>.log.<stamp>, compresses
// older rotations and drops the oldest beyond maxFiles. Like the kubelet,
// it keeps writing to an oversized file when the stamp is already taken
// (two rotations in one second) and tries again on a later record.
func (l *criLog) rotate(now time.Time) error {
	rotated := l.path() + "." + now.UTC().Format(rotationStamp)
	for _, name := range []string{rotated, rotated + ".gz"} {
		if _, err := os.Lstat(name); err == nil {
			return nil
		}
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("close container log: %w", err)
	}
	if err := os.Rename(l.path(), rotated); err != nil {
		return fmt.Errorf("rotate container log: %w", err)
	}
	if err := l.open(); err != nil {
		return err
	}
	return l.compressAndPrune(filepath.Base(rotated))
}

// compressAndPrune gzips every rotated file of this restart but newest
// and removes the oldest rotations so at most maxFiles remain.
func (l *criLog) compressAndPrune(newest string) error {
	entries, err := os.ReadDir(l.opts.dir)
	if err != nil {
		return fmt.Errorf("list container log dir: %w", err)
	}
	prefix := strconv.Itoa(l.opts.restart) + ".log."
	var rotated []string // stamps, oldest first after sorting
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || strings.HasSuffix(name, ".tmp") {
			continue
		}
		rotated = append(rotated, strings.TrimSuffix(name, ".gz"))
	}
	slices.Sort(rotated)
	rotated = slices.Compact(rotated)
	var errs []error
	// The current file counts towards maxFiles.
	for len(rotated) > 0 && len(rotated)+1 > l.opts.maxFiles {
		base := filepath.Join(l.opts.dir, prefix+rotated[0])
		for _, name := range []string{base, base + ".gz"} {
			if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		rotated = rotated[1:]
	}
	for _, stamp := range rotated {
		if name := prefix + stamp; name != newest {
			errs = append(errs, gzipFile(filepath.Join(l.opts.dir, name)))
		}
	}
	return errors.Join(errs...)
}

// gzipFile compresses path to path.gz through a .tmp file and removes
// path. A missing path (already compressed) is not an error.
func gzipFile(path string) error {
	in, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("open rotated log: %w", err)
	}
	defer in.Close()
	tmp := path + ".gz.tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("create compressed log: %w", err)
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	err = errors.Join(err, zw.Close(), out.Close())
	if err == nil {
		err = os.Rename(tmp, path+".gz")
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compress rotated log: %w", err)
	}
	return os.Remove(path)
}

// Close writes any unfinished lines as F records and closes the file.
func (l *criLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	var errs []error
	for s := range l.pending {
		if len(l.pending[s]) > 0 {
			errs = append(errs, l.writeLine(s, l.pending[s]))
			l.pending[s] = nil
		}
	}
	l.closed = true
	errs = append(errs, l.f.Close())
	return errors.Join(errs...)
}
