package clusterjourney

import (
	"fmt"
	"testing"
)

// failureT is the journey's testing.T. It keeps the first failure and
// the step it happened in, so that the journey can say them again as its
// last lines: a CI log's tail shows those, not a message some hundred
// lines of cluster output earlier.
type failureT struct {
	*testing.T
	step    string
	failure string
}

func (f *failureT) keep(msg string) {
	if f.failure != "" {
		return
	}
	f.failure = msg
	if f.step != "" {
		f.failure = fmt.Sprintf("in step %q: %s", f.step, msg)
	}
}

// Fatal is testing.T's, and keeps the message.
func (f *failureT) Fatal(args ...any) {
	f.T.Helper()
	f.keep(fmt.Sprint(args...))
	f.T.Fatal(args...)
}

// Fatalf is testing.T's, and keeps the message.
func (f *failureT) Fatalf(format string, args ...any) {
	f.T.Helper()
	f.keep(fmt.Sprintf(format, args...))
	f.T.Fatalf(format, args...)
}

// Errorf is testing.T's, and keeps the message.
func (f *failureT) Errorf(format string, args ...any) {
	f.T.Helper()
	f.keep(fmt.Sprintf(format, args...))
	f.T.Errorf(format, args...)
}
