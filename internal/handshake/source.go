package handshake

import (
	"context"
	"fmt"
)

// tokenSource finds the launch-token candidates of a target's current
// container start, in the order to try them, leaving out those refused
// reports the app refused before.
type tokenSource interface {
	// name is the source's metric label and log value.
	name() string
	candidates(ctx context.Context, t Target, refused func(tok string) bool) (found, error)
	close() error
}

// found is what one search for tokens produced: the candidates and, for
// the log line and metrics, what was read.
type found struct {
	tokens    []string
	skipped   int   // distinct tokens left out as refused before
	files     int   // files opened
	lines     int   // log lines searched
	bytesRead int64 // bytes read from disk (compressed bytes for .gz)
	logBytes  int64 // of bytesRead, bytes of log files
	stoppedAt error // why older log files were not read, if not for a limit
}

// logSource finds tokens in launch lines of the pod's CRI log files.
type logSource struct {
	reader  *logReader
	matcher *tokenMatcher
}

func (s *logSource) name() string { return SourceLog }

func (s *logSource) candidates(ctx context.Context, t Target, refused func(tok string) bool) (found, error) {
	res, err := s.reader.read(ctx, t.logRef())
	f := found{files: res.files, lines: len(res.head) + len(res.lines), bytesRead: res.bytesRead, logBytes: res.bytesRead, stoppedAt: res.stoppedAt}
	if err != nil {
		return f, fmt.Errorf("read pod logs: %w", err)
	}
	f.tokens, f.skipped = s.matcher.candidates(res.head, res.lines, refused)
	if len(f.tokens) == 0 && f.skipped == 0 {
		return f, fmt.Errorf("%w in the last %d log lines", ErrNoToken, len(res.lines))
	}
	return f, nil
}

func (s *logSource) close() error { return s.reader.root.Close() }

// fileSource reads the token file the app writes into a volume of its pod.
type fileSource struct {
	reader *fileReader
}

func (s *fileSource) name() string { return SourceFile }

func (s *fileSource) candidates(ctx context.Context, t Target, refused func(tok string) bool) (found, error) {
	if err := ctx.Err(); err != nil {
		return found{}, err
	}
	tok, n, err := s.reader.read(t.PodUID)
	f := found{files: 1, bytesRead: n}
	if err != nil {
		return f, fmt.Errorf("read token file: %w", err)
	}
	if refused(tok) {
		f.skipped = 1
	} else {
		f.tokens = []string{tok}
	}
	return f, nil
}

func (s *fileSource) close() error { return s.reader.root.Close() }
