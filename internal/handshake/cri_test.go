package handshake

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"
)

// criCases drive TestParseCRILine and seed FuzzParseCRILine.
var criCases = []struct {
	name    string
	line    string
	ok      bool
	stream  stream
	partial bool
	text    string
}{
	{"full stdout", "2026-08-01T12:00:00.123456789Z stdout F hello world", true, streamStdout, false, "hello world"},
	{"partial stderr", "2026-08-01T12:00:00.1Z stderr P part", true, streamStderr, true, "part"},
	{"offset time", "2026-08-01T14:00:00.000000001+02:00 stdout F x", true, streamStdout, false, "x"},
	{"no fraction", "2026-08-01T12:00:00Z stdout F x", true, streamStdout, false, "x"},
	{"empty text with space", "2026-08-01T12:00:00Z stdout F ", true, streamStdout, false, ""},
	{"empty text without space", "2026-08-01T12:00:00Z stdout F", true, streamStdout, false, ""},
	{"text keeps spaces", "2026-08-01T12:00:00Z stdout F  two  spaces ", true, streamStdout, false, " two  spaces "},
	{"extra tags", "2026-08-01T12:00:00Z stdout P:x:y tail", true, streamStdout, true, "tail"},
	{"launch line", "2026-08-01T12:00:00Z stdout F " + launchLine(testToken("cri")), true, streamStdout, false, launchLine(testToken("cri"))},
	{"empty", "", false, 0, false, ""},
	{"only time", "2026-08-01T12:00:00Z", false, 0, false, ""},
	{"bad time", "yesterday stdout F x", false, 0, false, ""},
	{"bad stream", "2026-08-01T12:00:00Z stdin F x", false, 0, false, ""},
	{"bad tag", "2026-08-01T12:00:00Z stdout X x", false, 0, false, ""},
	{"lower tag", "2026-08-01T12:00:00Z stdout f x", false, 0, false, ""},
	{"missing tag", "2026-08-01T12:00:00Z stdout", false, 0, false, ""},
	{"double space", "2026-08-01T12:00:00Z  stdout F x", false, 0, false, ""},
	{"docker json", `{"log":"x\n","stream":"stdout","time":"2026-08-01T12:00:00Z"}`, false, 0, false, ""},
	{"nul bytes", "\x00\x00\x00 stdout F x", false, 0, false, ""},
	{"huge time", string(bytes.Repeat([]byte{'9'}, 100)) + " stdout F x", false, 0, false, ""},
}

func TestParseCRILine(t *testing.T) {
	for _, tc := range criCases {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := parseCRILine([]byte(tc.line))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if r.stream != tc.stream || r.partial != tc.partial || string(r.text) != tc.text {
				t.Errorf("got stream %d partial %v text %q, want %d %v %q", r.stream, r.partial, r.text, tc.stream, tc.partial, tc.text)
			}
			if r.time.IsZero() {
				t.Error("time not parsed")
			}
		})
	}
}

func TestJoiner(t *testing.T) {
	rec := func(s stream, partial bool, text string) record {
		return record{stream: s, partial: partial, text: []byte(text)}
	}
	// Lines are described as "<stream>:<text>", with "..." appended
	// when unfinished.
	describe := func(lines []logLine) []string {
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = fmt.Sprintf("%d:%s", l.stream, l.text)
			if l.unfinished {
				out[i] += "..."
			}
		}
		return out
	}
	tests := []struct {
		name string
		recs []record
		want []string // chronological
	}{
		{"full lines", []record{rec(0, false, "a"), rec(1, false, "b")}, []string{"0:a", "1:b"}},
		{"partials joined", []record{rec(0, true, "ab"), rec(0, true, "cd"), rec(0, false, "ef")}, []string{"0:abcdef"}},
		{"streams interleaved", []record{
			rec(0, true, "out1-"), rec(1, true, "err1-"), rec(1, false, "err2"), rec(0, false, "out2"),
		}, []string{"1:err1-err2", "0:out1-out2"}},
		{"open line flushed last", []record{rec(0, false, "done"), rec(0, true, "still writing")}, []string{"0:done", "0:still writing..."}},
		{"both open, newest last", []record{rec(1, true, "e"), rec(0, true, "o")}, []string{"1:e...", "0:o..."}},
		{"empty partial", []record{rec(0, true, ""), rec(0, false, "x")}, []string{"0:x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var j joiner
			for _, r := range tc.recs {
				j.add(r)
			}
			if got := describe(j.flush()); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestJoinerDoesNotAliasInput checks that joining never changes the records
// it was given, since their text aliases the tail buffer.
func TestJoinerDoesNotAliasInput(t *testing.T) {
	buf := []byte("abcdef")
	var j joiner
	j.add(record{partial: true, text: buf[0:2]})
	j.add(record{partial: false, text: buf[2:4]})
	lines := j.flush()
	if string(buf) != "abcdef" || string(lines[0].text) != "abcd" {
		t.Fatalf("buf %q lines %q", buf, lineStrings(lines))
	}
}

func FuzzParseCRILine(f *testing.F) {
	for _, tc := range criCases {
		f.Add([]byte(tc.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, ok := parseCRILine(line)
		if !ok {
			return
		}
		if r.stream >= numStreams {
			t.Fatalf("stream %d out of range", r.stream)
		}
		// The text is a suffix of the line and the fields before it
		// re-parse to the same record.
		if !bytes.HasSuffix(line, r.text) {
			t.Fatalf("text %q is not a suffix of %q", r.text, line)
		}
		prefix := line[:len(line)-len(r.text)]
		ts, _, _ := bytes.Cut(prefix, []byte{' '})
		if t2, err := time.Parse(time.RFC3339Nano, string(ts)); err != nil || !t2.Equal(r.time) {
			t.Fatalf("timestamp %q re-parses to %v, %v; record has %v", ts, t2, err, r.time)
		}
		var j joiner
		j.add(r)
		if lines := j.flush(); len(lines) != 1 || !bytes.Equal(lines[0].text, r.text) || lines[0].stream != r.stream || lines[0].unfinished != r.partial {
			t.Fatalf("joiner changed a single record: %+v", lines)
		}
	})
}
