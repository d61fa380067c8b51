package handshake

import (
	"bytes"
	"time"
)

// stream is the container output stream a CRI record came from.
type stream uint8

const (
	streamStdout stream = iota
	streamStderr
	numStreams
)

// record is one parsed CRI log line. text aliases the input line.
type record struct {
	time    time.Time
	stream  stream
	partial bool
	text    []byte
}

// maxTimestampLen bounds the timestamp field so a garbage line never
// reaches time.Parse with megabytes of input.
const maxTimestampLen = 64

// parseCRILine parses one line of the CRI log format,
//
//	<RFC3339Nano time> <stdout|stderr> <P|F>[:<more tags>] <text>
//
// without its trailing newline. A line ending right after the tag has empty
// text. It reports false for anything else and never panics.
func parseCRILine(line []byte) (record, bool) {
	var r record
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok || len(ts) == 0 || len(ts) > maxTimestampLen {
		return r, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return r, false
	}
	r.time = t

	st, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return r, false
	}
	switch string(st) {
	case "stdout":
		r.stream = streamStdout
	case "stderr":
		r.stream = streamStderr
	default:
		return r, false
	}

	tags, text, _ := bytes.Cut(rest, []byte{' '})
	// The kubelet reads only the first ':'-separated tag; later ones are
	// reserved, so tolerate them.
	tag, _, _ := bytes.Cut(tags, []byte{':'})
	switch string(tag) {
	case "P":
		r.partial = true
	case "F":
	default:
		return r, false
	}
	r.text = text
	return r, true
}

// logLine is one logical log line: the joined text of its records and
// the stream they came from. An unfinished line (its last record was a P)
// may still grow, so a token at its end may be cut short.
type logLine struct {
	stream     stream
	text       []byte
	unfinished bool
}

// joiner rebuilds logical lines from CRI records fed in chronological
// order. A partial record continues with the next record of the same stream,
// which may sit in the next (newer) file after a rotation.
type joiner struct {
	pending [numStreams][]byte
	open    [numStreams]bool
	// lastSeq orders the two streams' unfinished lines in flush.
	lastSeq [numStreams]int
	seq     int
	lines   []logLine
}

// add feeds one record.
func (j *joiner) add(r record) {
	j.seq++
	s := r.stream
	if r.partial {
		j.pending[s] = append(j.pending[s], r.text...)
		j.open[s] = true
		j.lastSeq[s] = j.seq
		return
	}
	if !j.open[s] {
		j.lines = append(j.lines, logLine{stream: s, text: r.text})
		return
	}
	line := append(j.pending[s], r.text...)
	j.pending[s], j.open[s] = nil, false
	j.lines = append(j.lines, logLine{stream: s, text: line})
}

// flush ends the input: a line still open (its writer has not finished it)
// is emitted as it is, being the newest text of its stream.
func (j *joiner) flush() []logLine {
	first, second := streamStdout, streamStderr
	if j.lastSeq[second] < j.lastSeq[first] {
		first, second = second, first
	}
	for _, s := range [...]stream{first, second} {
		if j.open[s] {
			j.lines = append(j.lines, logLine{stream: s, text: j.pending[s], unfinished: true})
			j.pending[s], j.open[s] = nil, false
		}
	}
	return j.lines
}
