package kubelet

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// criRecord is one parsed line of a CRI log file.
type criRecord struct {
	time   time.Time
	stream string
	tag    string
	text   string
}

var criLine = regexp.MustCompile(`^(\S+) (stdout|stderr) (P|F) (.*)$`)

// parseCRI parses every line of data and fails the test on any that is not
// a CRI record.
func parseCRI(t *testing.T, data []byte) []criRecord {
	t.Helper()
	var recs []criRecord
	for line := range strings.Lines(string(data)) {
		if !strings.HasSuffix(line, "\n") {
			t.Fatalf("record without newline: %q", line)
		}
		m := criLine.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			t.Fatalf("not a CRI record: %q", line)
		}
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatalf("bad timestamp in %q: %v", line, err)
		}
		recs = append(recs, criRecord{ts, m[2], m[3], m[4]})
	}
	return recs
}

// joinCRI rebuilds the logical lines of one stream.
func joinCRI(recs []criRecord, stream string) []string {
	var lines []string
	var cur strings.Builder
	for _, r := range recs {
		if r.stream != stream {
			continue
		}
		cur.WriteString(r.text)
		if r.tag == "F" {
			lines = append(lines, cur.String())
			cur.Reset()
		}
	}
	return lines
}

func newTestLog(t *testing.T, maxSize int64, maxFiles, maxLine int) (*criLog, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ns_pod_uid", "app")
	clock := testkit.NewSteppingClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), time.Second)
	l, err := openCRILog(criLogOptions{dir: dir, restart: 0, maxSize: maxSize, maxFiles: maxFiles, maxLine: maxLine, now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return l, dir
}

func TestCRILogRecords(t *testing.T) {
	l, dir := newTestLog(t, 1<<20, 5, 8)
	io.WriteString(l.Stdout(), "hello\n")
	io.WriteString(l.Stderr(), "warn: 0123456789abcdef!\n") // 24 bytes: P P F
	io.WriteString(l.Stdout(), "split ")                    // no newline yet
	io.WriteString(l.Stderr(), "between\n")
	io.WriteString(l.Stdout(), "write\nunterminated")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	recs := parseCRI(t, data)
	var tags []string
	for _, r := range recs {
		tags = append(tags, strings.TrimPrefix(r.stream, "std")+":"+r.tag)
		if len(r.text) > 8 {
			t.Errorf("record text %q longer than the max line", r.text)
		}
	}
	want := []string{"out:F", "err:P", "err:P", "err:F", "err:F", "out:P", "out:F", "out:P", "out:F"}
	if !slices.Equal(tags, want) {
		t.Errorf("stream:tag sequence %v, want %v", tags, want)
	}
	if got := joinCRI(recs, "stdout"); !slices.Equal(got, []string{"hello", "split write", "unterminated"}) {
		t.Errorf("stdout lines %q", got)
	}
	if got := joinCRI(recs, "stderr"); !slices.Equal(got, []string{"warn: 0123456789abcdef!", "between"}) {
		t.Errorf("stderr lines %q", got)
	}
	if !recs[1].time.After(recs[0].time) {
		t.Errorf("timestamps do not advance: %v then %v", recs[0].time, recs[1].time)
	}
}

func TestCRILogRotation(t *testing.T) {
	const maxSize = 400
	l, dir := newTestLog(t, maxSize, 4, 1024)
	var written []string
	for i := range 60 {
		line := strings.Repeat("x", i%17) + " line " + string(rune('a'+i%26))
		written = append(written, line)
		if _, err := io.WriteString(l.Stdout(), line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	// 4 files at most: 0.log, the newest rotation plain, older ones gzipped.
	if len(names) != 4 {
		t.Fatalf("files %v, want 4", names)
	}
	rotated := regexp.MustCompile(`^0\.log\.\d{8}-\d{6}(\.gz)?$`)
	var plain, gz []string
	for _, n := range names {
		switch {
		case n == "0.log":
		case !rotated.MatchString(n):
			t.Errorf("unexpected file %q", n)
		case strings.HasSuffix(n, ".gz"):
			gz = append(gz, n)
		default:
			plain = append(plain, n)
		}
	}
	if len(plain) != 1 || len(gz) != 2 {
		t.Fatalf("plain rotations %v, gzipped %v: want 1 and 2", plain, gz)
	}
	if strings.TrimSuffix(gz[1], ".gz") >= plain[0] {
		t.Errorf("the plain rotation %s is not the newest (gz %v)", plain[0], gz)
	}
	// Read the kept files oldest first: every file is within the size,
	// parses as CRI, and together they end with the last lines written.
	var all []criRecord
	for _, n := range append(append(gz, plain...), "0.log") {
		data := readMaybeGzip(t, filepath.Join(dir, n))
		if len(data) > maxSize {
			t.Errorf("%s has %d bytes, over the %d limit", n, len(data), maxSize)
		}
		all = append(all, parseCRI(t, data)...)
	}
	got := joinCRI(all, "stdout")
	if len(got) == 0 || len(got) >= len(written) {
		t.Fatalf("kept %d lines of %d, want the newest ones only", len(got), len(written))
	}
	if tail := written[len(written)-len(got):]; !slices.Equal(got, tail) {
		t.Errorf("kept lines %q, want the tail %q", got, tail)
	}
}

func readMaybeGzip(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(path, ".gz") {
		return data
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCRILogWriteAfterClose(t *testing.T) {
	l, _ := newTestLog(t, 1<<20, 5, 1024)
	l.Close()
	if _, err := io.WriteString(l.Stdout(), "late\n"); err == nil {
		t.Error("write after close succeeded")
	}
}
