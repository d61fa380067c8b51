package controlplane_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/controlplane"
)

// TestStartProcess checks that a child gets exactly the environment it is
// given, logs to its file, and that Stop ends its whole process group.
func TestStartProcess(t *testing.T) {
	dir := t.TempDir()
	p, err := controlplane.StartProcess("child", dir, "/bin/sh", []string{"GREETING=hello"},
		"-c", `echo "$GREETING ${HOME:-nohome}"; sleep 60 & echo "grandchild $!"; wait`)
	if err != nil {
		t.Fatal(err)
	}
	var grandchild string
	deadline := time.Now().Add(10 * time.Second)
	for grandchild == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no output; log %q", p.LogTail())
		}
		for _, line := range strings.Split(p.LogTail(), "\n") {
			if g, ok := strings.CutPrefix(line, "grandchild "); ok {
				grandchild = g
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(p.LogTail(), "hello nohome") || p.Name() != "child" || !strings.HasPrefix(p.LogPath(), dir) {
		t.Errorf("log %q at %s", p.LogTail(), p.LogPath())
	}
	if p.Exited() {
		t.Fatal("exited early")
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	// The grandchild was in the group: it is gone too (or a zombie of
	// init at most, which kill(0) still sees briefly).
	deadline = time.Now().Add(5 * time.Second)
	for {
		pid, err := strconv.Atoi(grandchild)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			break
		}
		if data, _ := os.ReadFile("/proc/" + grandchild + "/stat"); strings.Contains(string(data), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %s survives Stop", grandchild)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}
