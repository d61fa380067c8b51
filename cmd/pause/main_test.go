package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// helperEnv makes the test binary act as pause ("pause"), as pause with a
// child that exits once its stdin closes ("pause-with-child"), or as that
// child ("child").
const helperEnv = "SANDGATE_PAUSE_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "pause-with-child":
		child := testkit.SelfCommand(helperEnv + "=child")
		child.Stdin = os.Stdin
		if err := child.Start(); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(child.Process.Pid) + "\n")
		main()
	case "child":
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func TestWait(t *testing.T) {
	signals := make(chan os.Signal, 4)
	signals <- syscall.SIGCHLD
	signals <- syscall.SIGCHLD
	signals <- syscall.SIGTERM
	signals <- syscall.SIGCHLD
	reaps := 0
	var stderr bytes.Buffer
	code := wait(signals, func() error { reaps++; return errors.New("boom") }, &stderr)
	if code != 0 || reaps != 2 {
		t.Errorf("exit %d after %d reaps, want 0 after 2", code, reaps)
	}
	if got := stderr.String(); !strings.Contains(got, "reap children: boom") || !strings.HasSuffix(got, "Shutting down, got signal: terminated\n") {
		t.Errorf("stderr %q", got)
	}
}

func TestUsage(t *testing.T) {
	for _, tt := range []struct {
		arg  string
		code int
		out  string
	}{
		{"-v", 0, version},
		{"--help", 0, "Usage: pause"},
		{"--bogus", 2, `unexpected argument "--bogus"`},
	} {
		var out bytes.Buffer
		if code := usage([]string{tt.arg}, &out, &out); code != tt.code || !strings.Contains(out.String(), tt.out) {
			t.Errorf("%s: exit %d, output %q; want %d and %q", tt.arg, code, out.String(), tt.code, tt.out)
		}
	}
}

// TestProcess runs pause as a process: a child that exits is reaped, not
// left a zombie, and SIGTERM ends pause with status 0.
func TestProcess(t *testing.T) {
	cmd := testkit.SelfCommand(helperEnv + "=pause-with-child")
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderrW
	childStdin, stdout := testkit.StartPiped(t, cmd)
	stderrW.Close()

	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("read child pid: %v", err)
	}
	childPid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child pid %q: %v", line, err)
	}
	// pause prints its warning once it handles signals.
	errLines := bufio.NewReader(stderrR)
	if warn, err := errLines.ReadString('\n'); err != nil || !strings.Contains(warn, "should be the first process") {
		t.Fatalf("first stderr line %q, %v", warn, err)
	}

	childStdin.Close() // the child exits and becomes pause's zombie until reaped
	proc := "/proc/" + strconv.Itoa(childPid)
	testkit.EventuallyNil(t, "the exited child reaped", func() error {
		if _, err := os.Stat(proc); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		stat, _ := os.ReadFile(proc + "/stat")
		return fmt.Errorf("child %d not reaped: %s", childPid, stat)
	})

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(errLines)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("pause after SIGTERM: %v (stderr %q)", err, rest)
	}
	if !strings.Contains(string(rest), "Shutting down, got signal: terminated") {
		t.Errorf("stderr after SIGTERM %q", rest)
	}
}
