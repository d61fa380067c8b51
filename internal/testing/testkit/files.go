package testkit

import (
	"errors"
	"os"
	"regexp"
	"testing"
)

// launchLine is the line the agent web app (and its stand-in) prints at
// start, with its launch token.
var launchLine = regexp.MustCompile(`dsh web: listening on http://\S+/\?token=([A-Za-z0-9_-]{43})`)

// LaunchToken returns the launch token in one (uncompressed) log file and
// fails the test if there is none.
func LaunchToken(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := launchLine.FindSubmatch(data)
	if m == nil {
		t.Fatalf("no launch token in %s", path)
	}
	return string(m[1])
}

// Exists reports whether path may exist: anything but "does not exist".
func Exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// HasLaunchLine reports whether data holds the agent's launch line.
func HasLaunchLine(data []byte) bool { return launchLine.Match(data) }
