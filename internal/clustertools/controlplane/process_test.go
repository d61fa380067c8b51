package controlplane_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/testing/testkit"
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
	testkit.Eventually(t, "the child's output in its log", func() bool {
		for _, line := range strings.Split(p.LogTail(), "\n") {
			if g, ok := strings.CutPrefix(line, "grandchild "); ok {
				grandchild = g
			}
		}
		return grandchild != ""
	})
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
	pid, err := strconv.Atoi(grandchild)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "grandchild "+grandchild+" gone after Stop", func() bool {
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			return true
		}
		data, _ := os.ReadFile("/proc/" + grandchild + "/stat")
		return strings.Contains(string(data), ") Z ")
	})
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}
