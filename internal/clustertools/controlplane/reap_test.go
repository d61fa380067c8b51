package controlplane_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/clustertest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// childEnv makes the test binary act as a child that starts a control plane,
// prints its directory and then ends as the mode says.
const childEnv = "SANDGATE_REAP_CHILD"

func TestReapChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("runs only as the child of TestChildProcessesAreReaped")
	}
	cp, err := clustertest.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("DIR %s\n", cp.Dir())
	// End only once the parent has seen both processes running.
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	switch mode {
	case "fail":
		cp.Stop()
		t.Fatal("deliberate failure")
	case "panic":
		panic("deliberate panic")
	case "hang":
		select {}
	}
}

func TestChildProcessesAreReaped(t *testing.T) {
	for _, mode := range []string{"fail", "panic", "hang"} {
		t.Run(mode, func(t *testing.T) {
			cmd := testkit.SelfCommand(childEnv+"="+mode, "-test.run=^TestReapChild$", "-test.v")
			// A killed or panicking child cannot remove its control-plane
			// directory: it goes with this test's temporary directory.
			cmd.Env = append(cmd.Env, "TMPDIR="+t.TempDir())
			in, out := testkit.StartPiped(t, cmd)
			dir := ""
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "DIR "); ok {
					dir = d
					break
				}
			}
			if dir == "" {
				t.Fatal("child printed no control-plane dir")
			}
			if len(processesUsing(dir)) != 2 {
				t.Errorf("want etcd and kube-apiserver running under %s, got %v", dir, processesUsing(dir))
			}
			fmt.Fprintln(in, "go")
			if mode == "hang" {
				// An interrupted run: the test binary is killed outright.
				cmd.Process.Signal(syscall.SIGKILL)
			}
			go func() { _, _ = bufio.NewReader(out).WriteTo(discard{}) }()
			cmd.Wait()
			testkit.Eventually(t, "no process left behind after a "+mode+" run", func() bool { return len(processesUsing(dir)) == 0 })
			if _, err := os.Stat(dir); mode == "fail" && !os.IsNotExist(err) {
				t.Errorf("Stop left %s behind (stat: %v)", dir, err)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// processesUsing lists the command names of live processes whose command line
// mentions dir.
func processesUsing(dir string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if strings.Contains(string(stat), ") Z ") {
			continue
		}
		found = append(found, filepath.Base(strings.SplitN(string(cmdline), "\x00", 2)[0]))
	}
	return found
}
