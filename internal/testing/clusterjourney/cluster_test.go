package clusterjourney

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/clusterinstall"
)

// repoRoot is the repository's root, where make puts bin/.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// startCluster runs `bin/sandgate-cluster up` as make cluster does and
// waits until it has written its entries. At cleanup it sends SIGINT, as
// Ctrl-C does, and fails the test unless the command ends cleanly, which
// includes finding nothing of the cluster left on the machine.
func startCluster(t *testing.T, idle, report time.Duration) clusterinstall.Entries {
	t.Helper()
	root := repoRoot(t)
	ready := filepath.Join(t.TempDir(), "entries.json")
	cmd, stdout := startUp(t, "--ready-file", ready, "--logs-dir", filepath.Join(root, "artifacts", "cluster"),
		"--control-socket", filepath.Join(filepath.Dir(ready), "control.sock"),
		"--idle-timeout", idle.String(), "--report-interval", report.String())
	upDone, removed, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l := sc.Text()
			t.Log("cluster: " + l)
			switch {
			case strings.HasPrefix(l, "Ctrl-C removes the cluster"):
				close(upDone)
			case strings.Contains(l, "nothing of it is left"):
				close(removed)
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		<-ended
		err := cmd.Wait()
		select {
		case <-removed:
		default:
			t.Errorf("sandgate-cluster did not report a clean removal")
		}
		if err != nil {
			t.Errorf("sandgate-cluster ended with %v; see its output above and artifacts/cluster", err)
		}
	})
	select {
	case <-upDone:
	case <-ended:
		t.Fatalf("sandgate-cluster ended before the cluster was ready")
	case <-time.After(25 * time.Minute):
		t.Fatalf("the cluster did not come up in 25 minutes")
	}
	data, err := os.ReadFile(ready)
	if err != nil {
		t.Fatalf("read the entries: %v", err)
	}
	var e clusterinstall.Entries
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("parse the entries: %v", err)
	}
	return e
}

// startUp starts `bin/sandgate-cluster up` with the images' version and
// args, and returns it with its combined output.
func startUp(t *testing.T, args ...string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	root := repoRoot(t)
	cmd := exec.Command(filepath.Join(root, "bin", "sandgate-cluster"), append([]string{"up", "--version", envOr("VERSION", "dev")}, args...)...)
	cmd.Dir = root
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sandgate-cluster: %v", err)
	}
	return cmd, stdout
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// kubectl runs kubectl as cluster admin.
func (j *journey) kubectl(args ...string) (string, error) {
	return j.kubectlWithin(time.Minute, args...)
}

// kubectlWithin runs kubectl for at most d: longer than a command's own
// --timeout, so that the command says what it waited for.
func (j *journey) kubectlWithin(d time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	out, err := exec.CommandContext(ctx, j.e.Kubectl, append([]string{"--kubeconfig=" + j.e.Kubeconfig}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestKilledRunIsCleanedUp kills `sandgate-cluster up` once the cluster is
// up, as a crash or kill -9 would, and checks that `sandgate-cluster down`
// (make cluster-down) then leaves nothing of it on the machine.
func TestKilledRunIsCleanedUp(t *testing.T) {
	if os.Getenv("SANDGATE_CLUSTER_JOURNEY") != "1" {
		t.Skip("needs root and a few minutes: run `make e2e-cluster`")
	}
	cmd, stdout := startUp(t)
	up := false
	var said []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "cluster up in") {
			up = true
			break
		}
		said = append(said, sc.Text())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	_ = cmd.Wait()
	if !up {
		t.Fatalf("the cluster did not come up before it was killed; it said:\n%s", strings.Join(said, "\n"))
	}
	out, err := exec.Command(filepath.Join(repoRoot(t), "bin", "sandgate-cluster"), "down").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nothing of the cluster is left") {
		t.Fatalf("down after a killed run: %v\n%s", err, out)
	}
}
