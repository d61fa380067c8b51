package handshake

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
)

// maxDirEntries bounds how many entries of a container's log directory are
// listed. The kubelet keeps a handful of files there.
const maxDirEntries = 1024

// readerLimits bounds what one read of a container's logs may cost.
type readerLimits struct {
	maxLines      int   // logical lines wanted, newest first
	maxFileBytes  int64 // tail bytes taken from one file
	maxTotalBytes int64 // tail bytes taken from all files together
	maxGzipBytes  int64 // decompressed bytes scanned per .gz file
}

// logReader reads the newest lines of a container's log files under one log
// root. It never follows a symlink and never leaves the root.
type logReader struct {
	root   *os.Root
	limits readerLimits
}

// logFile is one candidate file in a container's log directory.
type logFile struct {
	name    string
	restart int
	stamp   string // rotation timestamp; "" for the current file
	gzip    bool
}

// headBytes bounds what is read from the start of the current restart's
// oldest log file. The app prints its launch line as it starts, so the
// line sits in the first few hundred bytes.
const headBytes = 64 << 10

// readResult is what one read produced.
type readResult struct {
	head      []logLine // logical lines at the start of the oldest file, oldest first
	lines     []logLine // logical lines, newest first
	bytesRead int64     // bytes read from disk (compressed bytes for .gz)
	files     int       // files opened
	stoppedAt error     // why older files were not read, if not for a limit
}

// read returns up to limits.maxLines logical lines of the container's
// current restart, newest first: the current <restart>.log, then its
// rotated files newest first. Older restarts are not read: their container
// printed a launch token that died with it. It also returns the head of
// the restart's oldest file still on disk, where the container start's
// first lines are unless the kubelet has removed that file.
func (r *logReader) read(ctx context.Context, ref logRef) (readResult, error) {
	var res readResult
	if err := ref.validate(); err != nil {
		return res, err
	}
	dir, err := r.openContainerDir(ref)
	if err != nil {
		return res, err
	}
	defer dir.Close()

	files, err := listLogFiles(dir)
	if err != nil {
		return res, err
	}
	if len(files) == 0 {
		return res, fmt.Errorf("%w: no log files", ErrNoLogs)
	}

	// Windows are collected newest file first, then joined oldest first so
	// a partial record at the end of a rotated file continues into the
	// newer file.
	var windows [][]record
	full := 0 // complete (F) records so far: an upper bound on lines
	budget := r.limits.maxTotalBytes
	for _, lf := range files {
		if full >= r.limits.maxLines || budget <= 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		tail, n, taken, err := r.readFile(dir, lf, min(budget, r.limits.maxFileBytes), r.limits.maxLines-full)
		res.bytesRead += n
		res.files++
		budget -= taken
		if err != nil && lf.gzip && !errors.Is(err, ErrUnsafePath) {
			// A compressed file that is too large or corrupt ends the
			// readable history; what was read so far is still a
			// consistent newest-first tail.
			res.stoppedAt = err
			break
		}
		if err != nil {
			return res, err
		}
		recs := parseRecords(tail)
		for _, rec := range recs {
			if !rec.partial {
				full++
			}
		}
		windows = append(windows, recs)
	}

	head, n, err := r.readHead(dir, files[len(files)-1])
	res.bytesRead += n
	res.files++
	if err != nil {
		return res, err
	}
	res.head = head

	var j joiner
	for i := len(windows) - 1; i >= 0; i-- {
		for _, rec := range windows[i] {
			j.add(rec)
		}
	}
	lines := j.flush()
	slices.Reverse(lines)
	if len(lines) > r.limits.maxLines {
		lines = lines[:r.limits.maxLines]
	}
	res.lines = lines
	return res, nil
}

// openContainerDir opens <pod dir>/<container> as its own root, refusing
// either component when it is a symlink or anything but a directory.
func (r *logReader) openContainerDir(ref logRef) (*os.Root, error) {
	dir, err := openDir(r.root, ref.podDir(), ref.container)
	if err != nil {
		return nil, classifyOpenErr(err, "open log directory")
	}
	return dir, nil
}

// readFile returns the tail of one log file, refusing anything that is not
// a regular file reached without a symlink. read counts bytes read from
// disk; taken counts the bytes of the file's tail window held in memory,
// which is what the total byte budget limits.
func (r *logReader) readFile(dir *os.Root, lf logFile, window int64, maxLines int) (tail []byte, read, taken int64, err error) {
	f, fi, err := openRegular(dir, lf.name)
	if errors.Is(err, fs.ErrNotExist) {
		// Rotated or compressed away since the listing.
		return nil, 0, 0, nil
	}
	if err != nil {
		return nil, 0, 0, classifyOpenErr(err, "open log file")
	}
	defer f.Close()
	if !lf.gzip {
		tail, read, err = readTail(f, fi.Size(), window, maxLines)
		return tail, read, read, err
	}
	if fi.Size() > r.limits.maxGzipBytes {
		return nil, 0, 0, errGzipTooLarge
	}
	cr := &countingReader{r: f}
	tail, out, err := readGzipTail(cr, window, r.limits.maxGzipBytes, maxLines)
	return tail, cr.n, min(out, window), err
}

// readHead returns the logical lines in the first headBytes of lf, oldest
// first, with the same care as readFile. A compressed file that cannot be
// decompressed has no head, as it ends the tail's history. read counts
// bytes read from disk.
func (r *logReader) readHead(dir *os.Root, lf logFile) (lines []logLine, read int64, err error) {
	f, _, err := openRegular(dir, lf.name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, classifyOpenErr(err, "open log file")
	}
	defer f.Close()
	cr := &countingReader{r: f}
	var src io.Reader = cr
	if lf.gzip {
		zr, err := gzip.NewReader(cr)
		if err != nil {
			return nil, cr.n, nil
		}
		defer zr.Close()
		src = zr
	}
	buf, err := io.ReadAll(io.LimitReader(src, headBytes))
	switch {
	case err != nil && lf.gzip:
		return nil, cr.n, nil
	case err != nil:
		return nil, cr.n, fmt.Errorf("read log head: %w", err)
	}
	// A line cut by the window, or still being written, is dropped.
	var j joiner
	for _, rec := range parseRecords(buf[:bytes.LastIndexByte(buf, '\n')+1]) {
		j.add(rec)
	}
	return j.flush(), cr.n, nil
}

// listLogFiles returns the current restart's log files, newest first.
func listLogFiles(dir *os.Root) ([]logFile, error) {
	d, err := dir.Open(".")
	if err != nil {
		return nil, fmt.Errorf("open log directory: %w", err)
	}
	defer d.Close()
	entries, err := d.ReadDir(maxDirEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("list log directory: %w", err)
	}
	if len(entries) > maxDirEntries {
		return nil, fmt.Errorf("list log directory: more than %d entries", maxDirEntries)
	}

	var files []logFile
	latest := -1
	for _, e := range entries {
		lf, ok := parseLogName(e.Name())
		if !ok {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: log file is a symlink", ErrUnsafePath)
		}
		files = append(files, lf)
		latest = max(latest, lf.restart)
	}
	files = slices.DeleteFunc(files, func(lf logFile) bool { return lf.restart != latest })
	slices.SortFunc(files, func(a, b logFile) int {
		// Current file first, then newer rotations, and a plain file
		// before its compressed twin (the kubelet deletes the plain one
		// right after writing the .gz).
		if a.stamp == "" || b.stamp == "" {
			return cmp.Compare(len(a.stamp), len(b.stamp))
		}
		if c := strings.Compare(b.stamp, a.stamp); c != 0 {
			return c
		}
		return compareBool(a.gzip, b.gzip)
	})
	files = slices.CompactFunc(files, func(a, b logFile) bool { return a.stamp == b.stamp })
	return files, nil
}

// parseLogName recognises <restart>.log and <restart>.log.<YYYYMMDD-hhmmss>
// with an optional .gz. Anything else (the kubelet's .tmp files while it
// compresses, stray files) is ignored.
func parseLogName(name string) (logFile, bool) {
	num, rest, ok := strings.Cut(name, ".log")
	if !ok || len(num) == 0 || len(num) > 9 {
		return logFile{}, false
	}
	restart, err := strconv.Atoi(num)
	if err != nil || restart < 0 || num[0] == '+' || num[0] == '-' {
		return logFile{}, false
	}
	lf := logFile{name: name, restart: restart}
	if rest == "" {
		return lf, true
	}
	rest, ok = strings.CutPrefix(rest, ".")
	if !ok {
		return logFile{}, false
	}
	rest, lf.gzip = strings.CutSuffix(rest, ".gz")
	if !isRotationStamp(rest) {
		return logFile{}, false
	}
	lf.stamp = rest
	return lf, true
}

// isRotationStamp reports whether s has the kubelet's rotation timestamp
// form, 20060102-150405, whose lexical order is its time order.
func isRotationStamp(s string) bool {
	if len(s) != 15 || s[8] != '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i != 8 && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

// parseRecords splits a tail into lines and parses each, skipping
// malformed ones.
func parseRecords(tail []byte) []record {
	recs := make([]record, 0, bytes.Count(tail, []byte{'\n'}))
	for line := range bytes.Lines(tail) {
		if rec, ok := parseCRILine(bytes.TrimSuffix(line, []byte{'\n'})); ok {
			recs = append(recs, rec)
		}
	}
	return recs
}

// classifyOpenErr maps a failed open or stat under the root: a missing
// directory or file means the pod has no logs on this node (yet). Escapes
// are refused by os.Root itself and stay plain errors: the Lstat checks
// before every open already refuse symlinks, so only a race gets there.
func classifyOpenErr(err error, what string) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: not found", ErrNoLogs, what)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
