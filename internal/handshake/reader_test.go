package handshake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func readLines(t *testing.T, r *logReader) (readResult, []string) {
	t.Helper()
	res, err := r.read(context.Background(), testRef())
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return res, lineStrings(res.lines)
}

func TestReaderPartialRecordsBothStreams(t *testing.T) {
	p := newPodLogs(t)
	c := newCrier()
	p.write("0.log",
		c.out("starting"),
		c.rec("stdout", "P", "dsh web: listening on "),
		c.rec("stderr", "P", "warning: "),
		c.rec("stdout", "P", "http://0.0.0.0:3080/"),
		c.rec("stderr", "F", "slow disk"),
		"garbage that is not a CRI line\n",
		c.rec("stdout", "F", "?token=abc"),
		c.rec("stderr", "F", "last"),
	)
	_, got := readLines(t, newTestReader(t, p.root, readerLimits{}))
	want := []string{"last", "dsh web: listening on http://0.0.0.0:3080/?token=abc", "warning: slow disk", "starting"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestReaderRotationMidLine(t *testing.T) {
	p := newPodLogs(t)
	c := newCrier()
	tok := testToken("rotation")
	line := launchLine(tok)
	p.write("0.log.20260801-110000",
		c.out("old"),
		c.rec("stdout", "P", line[:20]),
		c.rec("stdout", "P", line[20:40]),
	)
	p.write("0.log",
		c.rec("stdout", "F", line[40:]),
		c.out("new"),
	)
	_, got := readLines(t, newTestReader(t, p.root, readerLimits{}))
	want := []string{"new", line, "old"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// podLogFile is one file of a pod's log directory, written with one CRI
// stdout record per message.
type podLogFile struct {
	name string
	gzip bool
	msgs []string
}

// TestReaderFileChoice: which files are read, in which order, and where
// the line budget stops.
func TestReaderFileChoice(t *testing.T) {
	tests := []struct {
		name      string
		files     []podLogFile
		limits    readerLimits
		want      []string
		wantHead  []string // the oldest file's first lines, oldest first
		wantFiles int      // 0: not checked; the head's file counts again
	}{
		{
			name: "rotated and compressed, newest first",
			files: []podLogFile{
				{"0.log.20260801-090000.gz", true, []string{"gz1", "gz2"}},
				{"0.log.20260801-100000.gz", true, []string{"gz3"}},
				{"0.log.20260801-110000", false, []string{"plain1", "plain2"}},
				{"0.log", false, []string{"current1", "current2"}},
				// Noise the reader must ignore.
				{"0.log.20260801-110000.tmp", false, []string{"tmp"}},
				{"notes.txt", false, []string{"notes"}},
			},
			want:      []string{"current2", "current1", "plain2", "plain1", "gz3", "gz2", "gz1"},
			wantHead:  []string{"gz1", "gz2"},
			wantFiles: 5,
		},
		{
			// While the kubelet compresses, a rotated file exists plain and as .gz.
			name: "compression twin read once",
			files: []podLogFile{
				{"0.log.20260801-110000", false, []string{"rotated"}},
				{"0.log.20260801-110000.gz", true, []string{"rotated"}},
				{"0.log", false, []string{"current"}},
			},
			want:      []string{"current", "rotated"},
			wantHead:  []string{"rotated"},
			wantFiles: 3,
		},
		{
			name: "the newest restart wins over an older one's lines",
			files: []podLogFile{
				{"0.log", false, []string{launchLine(testToken("first container"))}},
				{"0.log.20260801-110000", false, []string{"older first container"}},
				{"1.log", false, []string{"second container"}},
			},
			want:     []string{"second container"},
			wantHead: []string{"second container"},
		},
		{
			// Between rotation and the runtime reopening, only rotated files of
			// the newest restart may exist.
			name: "newest restart with rotated files only",
			files: []podLogFile{
				{"0.log", false, []string{"first container"}},
				{"2.log.20260801-110000", false, []string{"third container"}},
			},
			want:     []string{"third container"},
			wantHead: []string{"third container"},
		},
		{
			name: "line budget",
			files: []podLogFile{
				{"0.log.20260801-100000", false, []string{"start, beyond the tail"}},
				{"0.log.20260801-110000", false, []string{"r1", "r2", "r3"}},
				{"0.log", false, []string{"c1", "c2"}},
			},
			limits:    readerLimits{maxLines: 3, maxFileBytes: 1 << 20, maxTotalBytes: 1 << 20, maxGzipBytes: 1 << 20},
			want:      []string{"c2", "c1", "r3"},
			wantHead:  []string{"start, beyond the tail"},
			wantFiles: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPodLogs(t)
			c := newCrier()
			for _, f := range tt.files {
				var recs []string
				for _, m := range f.msgs {
					recs = append(recs, c.out(m))
				}
				if f.gzip {
					p.writeGzip(f.name, recs...)
				} else {
					p.write(f.name, recs...)
				}
			}
			res, got := readLines(t, newTestReader(t, p.root, tt.limits))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
			if head := lineStrings(res.head); !slices.Equal(head, tt.wantHead) {
				t.Errorf("head %q, want %q", head, tt.wantHead)
			}
			if tt.wantFiles != 0 && res.files != tt.wantFiles {
				t.Errorf("opened %d files, want %d", res.files, tt.wantFiles)
			}
		})
	}
}

func TestReaderTotalByteBudget(t *testing.T) {
	p := newPodLogs(t)
	c := newCrier()
	filler := strings.Repeat("x", 200)
	var lines []string
	for range 10 {
		lines = append(lines, c.out(filler))
	}
	start := c.out("start, beyond the tail")
	p.write("0.log.20260801-100000", start)
	p.write("0.log.20260801-110000", lines...)
	p.write("0.log", lines...)
	res, _ := readLines(t, newTestReader(t, p.root, readerLimits{maxLines: 1000, maxFileBytes: 1500, maxTotalBytes: 2500, maxGzipBytes: 1 << 20}))
	if res.bytesRead > 2500+int64(len(start)) {
		t.Errorf("read %d bytes, total cap 2500 and the %d-byte head", res.bytesRead, len(start))
	}
	if res.files != 3 {
		t.Errorf("opened %d files, want 2 and the head's", res.files)
	}
}

func TestReaderGzipTooLargeStopsThere(t *testing.T) {
	p := newPodLogs(t)
	c := newCrier()
	var big []string
	for range 100 {
		big = append(big, c.out(strings.Repeat("y", 100)))
	}
	p.writeGzip("0.log.20260801-100000.gz", c.out("behind the bomb"))
	p.writeGzip("0.log.20260801-110000.gz", big...)
	p.write("0.log", c.out("current"))
	_, got := readLines(t, newTestReader(t, p.root, readerLimits{maxLines: 1000, maxFileBytes: 1 << 20, maxTotalBytes: 1 << 20, maxGzipBytes: 4096}))
	if want := []string{"current"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestReaderNoLogs(t *testing.T) {
	t.Run("no pod dir", func(t *testing.T) {
		r := newTestReader(t, t.TempDir(), readerLimits{})
		if _, err := r.read(context.Background(), testRef()); !errors.Is(err, ErrNoLogs) {
			t.Fatalf("got %v, want ErrNoLogs", err)
		}
	})
	t.Run("no container dir", func(t *testing.T) {
		p := newPodLogs(t)
		ref := testRef()
		ref.container = "other"
		if _, err := newTestReader(t, p.root, readerLimits{}).read(context.Background(), ref); !errors.Is(err, ErrNoLogs) {
			t.Fatalf("got %v, want ErrNoLogs", err)
		}
	})
	t.Run("no files", func(t *testing.T) {
		p := newPodLogs(t)
		p.write("0.log.tmp", "x\n")
		if _, err := newTestReader(t, p.root, readerLimits{}).read(context.Background(), testRef()); !errors.Is(err, ErrNoLogs) {
			t.Fatalf("got %v, want ErrNoLogs", err)
		}
	})
}

func TestReaderInvalidRef(t *testing.T) {
	p := newPodLogs(t)
	r := newTestReader(t, p.root, readerLimits{})
	for _, ref := range []logRef{
		{namespace: "..", pod: testPod, uid: testUID, container: testContainer},
		{namespace: testNS, pod: "../" + testPod, uid: testUID, container: testContainer},
		{namespace: testNS, pod: testPod, uid: "../../etc", container: testContainer},
		{namespace: testNS, pod: testPod, uid: testUID, container: "../" + testContainer},
		{namespace: testNS, pod: testPod, uid: testUID, container: "."},
	} {
		if _, err := r.read(context.Background(), ref); !errors.Is(err, ErrInvalidRef) {
			t.Errorf("%+v: got %v, want ErrInvalidRef", ref, err)
		}
	}
}

func TestReaderRefusesUnsafePaths(t *testing.T) {
	c := newCrier()
	secret := c.out(launchLine(testToken("outside")))
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "0.log"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	podDir := testNS + "_" + testPod + "_" + testUID

	tests := []struct {
		name  string
		setup func(t *testing.T, root string)
	}{
		{"pod dir symlink outside root", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(outside, testContainer), 0o755)
			os.WriteFile(filepath.Join(outside, testContainer, "0.log"), []byte(secret), 0o644)
			mustSymlink(t, outside, filepath.Join(root, podDir))
		}},
		{"pod dir symlink inside root", func(t *testing.T, root string) {
			other := filepath.Join(root, "tenants_other_"+testUID)
			os.MkdirAll(filepath.Join(other, testContainer), 0o755)
			os.WriteFile(filepath.Join(other, testContainer, "0.log"), []byte(secret), 0o644)
			mustSymlink(t, "tenants_other_"+testUID, filepath.Join(root, podDir))
		}},
		{"container dir symlink", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(root, podDir), 0o755)
			mustSymlink(t, outside, filepath.Join(root, podDir, testContainer))
		}},
		{"container dir relative escape", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(root, podDir), 0o755)
			mustSymlink(t, "../../../../../../../../"+outside, filepath.Join(root, podDir, testContainer))
		}},
		{"current log symlink outside", func(t *testing.T, root string) {
			dir := filepath.Join(root, podDir, testContainer)
			os.MkdirAll(dir, 0o755)
			mustSymlink(t, filepath.Join(outside, "0.log"), filepath.Join(dir, "0.log"))
		}},
		{"rotated log symlink", func(t *testing.T, root string) {
			dir := filepath.Join(root, podDir, testContainer)
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "0.log"), []byte(c.out("current")), 0o644)
			mustSymlink(t, filepath.Join(outside, "0.log"), filepath.Join(dir, "0.log.20260801-110000"))
		}},
		{"compressed log symlink", func(t *testing.T, root string) {
			dir := filepath.Join(root, podDir, testContainer)
			os.MkdirAll(dir, 0o755)
			mustSymlink(t, "/etc/hostname", filepath.Join(dir, "0.log.20260801-110000.gz"))
		}},
		{"log is a directory", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(root, podDir, testContainer, "0.log"), 0o755)
		}},
		{"log is a fifo", func(t *testing.T, root string) {
			dir := filepath.Join(root, podDir, testContainer)
			os.MkdirAll(dir, 0o755)
			if err := syscall.Mkfifo(filepath.Join(dir, "0.log"), 0o644); err != nil {
				t.Skip("mkfifo:", err)
			}
		}},
		{"container dir is a file", func(t *testing.T, root string) {
			os.MkdirAll(filepath.Join(root, podDir), 0o755)
			os.WriteFile(filepath.Join(root, podDir, testContainer), []byte(secret), 0o644)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tc.setup(t, root)
			res, err := newTestReader(t, root, readerLimits{}).read(context.Background(), testRef())
			if !errors.Is(err, ErrUnsafePath) {
				t.Fatalf("got %v (lines %q), want ErrUnsafePath", err, lineStrings(res.lines))
			}
			if len(res.lines) != 0 {
				t.Fatalf("lines returned with an error: %q", lineStrings(res.lines))
			}
		})
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestReaderHugeSparseFile reads the token at the end of a 2 GiB log with
// only a bounded tail read and bounded allocation. It asserts bytes, not
// time.
func TestReaderHugeSparseFile(t *testing.T) {
	p := newPodLogs(t)
	c := newCrier()
	tok := testToken("huge")
	tail := c.out("noise before") + c.out(launchLine(tok)) + c.out("after")
	path := filepath.Join(p.dir, "0.log")
	const size = 2 << 30
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		t.Skip("sparse file:", err)
	}
	if _, err := f.WriteAt([]byte(tail), size-int64(len(tail))); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	const fileCap = 256 << 10
	r := newTestReader(t, p.root, readerLimits{maxLines: 1000, maxFileBytes: fileCap, maxTotalBytes: 1 << 20, maxGzipBytes: 1 << 20})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := r.read(context.Background(), testRef())
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := defaultMatcher(t).candidates(res.head, res.lines, nil); !slices.Equal(got, []string{tok}) {
		t.Fatalf("candidates %q, want the one launch token", got)
	}
	if res.bytesRead > fileCap+headBytes {
		t.Errorf("read %d bytes of a 2 GiB file, cap %d and a %d-byte head", res.bytesRead, fileCap, headBytes)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*fileCap {
		t.Errorf("allocated %d bytes reading a %d-byte tail", alloc, fileCap)
	}
}

func TestReaderContextCanceled(t *testing.T) {
	p := newPodLogs(t)
	p.write("0.log", newCrier().out("x"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newTestReader(t, p.root, readerLimits{}).read(ctx, testRef()); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// TestReaderHead: the head is the complete lines in the first headBytes of
// the oldest file, a line cut by the window dropped, whatever the tail's
// limits.
func TestReaderHead(t *testing.T) {
	p := newPodLogs(t)
	c := newCrier()
	first := c.out("booting")
	long := c.out(strings.Repeat("x", headBytes))
	p.write("0.log", first, long, c.out("after the window"))
	res, _ := readLines(t, newTestReader(t, p.root, readerLimits{maxLines: 1, maxFileBytes: 100, maxTotalBytes: 100, maxGzipBytes: 1 << 20}))
	if head := lineStrings(res.head); !slices.Equal(head, []string{"booting"}) {
		t.Errorf("head %q, want only the line inside the window", head)
	}
}

// TestStartLaunchLineBeyondTheTail: the app's launch line scrolled out of
// the searched tail is still found at the start of the container's log,
// and planted lines in the tail cost nothing.
func TestStartLaunchLineBeyondTheTail(t *testing.T) {
	x := newHarness(t, func(o *Options) { o.TailLines = 5 })
	lines := []string{x.crier.out(launchLine(x.token))}
	for range 10 {
		lines = append(lines, x.crier.out("agent output"), x.crier.out(launchLine(tokB)))
	}
	x.logs.write("0.log", lines...)
	if got := x.mustCookie(x.target); got != x.cookie {
		t.Fatalf("cookie %q, want the real app's", got)
	}
	x.wantExchanges(1)
}
