package handshake

import (
	"context"
	"fmt"
)

// tokenSource finds the launch-token candidates of a target's current
// container start, newest first.
type tokenSource interface {
	// name is the source's metric label and log value.
	name() string
	candidates(ctx context.Context, t Target) (found, error)
	close() error
}

// found is what one search for tokens produced: the candidates and, for
// the log line and metrics, what was read.
type found struct {
	tokens    []string
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

func (s *logSource) candidates(ctx context.Context, t Target) (found, error) {
	res, err := s.reader.read(ctx, t.logRef())
	f := found{files: res.files, lines: len(res.lines), bytesRead: res.bytesRead, logBytes: res.bytesRead, stoppedAt: res.stoppedAt}
	if err != nil {
		return f, fmt.Errorf("read pod logs: %w", err)
	}
	f.tokens = s.matcher.candidates(res.lines)
	if len(f.tokens) == 0 {
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

func (s *fileSource) candidates(ctx context.Context, t Target) (found, error) {
	if err := ctx.Err(); err != nil {
		return found{}, err
	}
	tok, n, err := s.reader.read(t.PodUID)
	f := found{files: 1, bytesRead: n}
	if err != nil {
		return f, fmt.Errorf("read token file: %w", err)
	}
	f.tokens = []string{tok}
	return f, nil
}

func (s *fileSource) close() error { return s.reader.root.Close() }
