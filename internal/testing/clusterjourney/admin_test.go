package clusterjourney

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/gobuild"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// adminCLI runs the shipped `authapi admin` from this machine against the
// real entry of every node, with admin's token (the chart's ADMINS names
// admin), until both auth API replicas' answers hold what only the sweep's
// leader knows: an answer from the replica that does not lead comes through
// its call to the leader, across the pods' network and its policies.
func (j *journey) adminCLI(admin account) {
	j.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := j.t.TempDir()
	if out, err := gobuild.Command(ctx, repoRoot(j.t), dir, "./cmd/authapi").CombinedOutput(); err != nil {
		j.t.Fatalf("build authapi: %v\n%s", err, out)
	}
	type row struct {
		User, State, Node, Sandbox string
		Activity                   *struct{ Exact bool }
	}
	run := func(i int, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(dir, "authapi"), append([]string{"admin", "--url", j.e.URLs[i], "--ca-file", j.e.CAFile}, args...)...)
		cmd.Env = []string{"SANDGATE_ADMIN_TOKEN=" + admin.token}
		out, err := cmd.Output()
		return string(out), err
	}
	exact := 0
	testkit.Within(j.t, 2*time.Minute, "the admin API through every entry, with the leader's facts in a row of answers", func() bool {
		for i := range j.e.URLs {
			out, err := run(i, "show", admin.user)
			var r row
			if err != nil || json.Unmarshal([]byte(out), &r) != nil || r.State != "Ready" || r.Sandbox != admin.sandbox || r.Node == "" || r.Activity == nil || !r.Activity.Exact {
				exact = 0
				return false
			}
			exact++
		}
		return exact >= 6
	})
	out, err := run(0, "list")
	if err != nil || !strings.Contains(out, admin.user) || !strings.Contains(out, "page 1 of 1") {
		j.t.Fatalf("authapi admin list through the entry: %v\n%s", err, out)
	}
	j.t.Logf("authapi admin through the real entries: %d answers in a row with the leader's facts; list:\n%s", exact, out)
}
