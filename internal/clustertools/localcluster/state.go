package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// hostSysctls are machine-wide settings the kubelets write; Up saves them
// and Down puts them back.
var hostSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"}

// state is what Down needs to undo a cluster, even one whose run was
// killed: it lives in the data directory until Down is done.
type state struct {
	Sysctls     map[string]string `json:"sysctls"`
	CreatedDirs []string          `json:"createdDirs"`
}

func statePath(p Paths) string { return filepath.Join(p.Data, "state.json") }

// saveState records the host's sysctls and which node mount targets do not
// exist yet (the nodes create them on the host's file system).
func saveState(p Paths) error {
	s := state{Sysctls: map[string]string{}}
	for _, k := range hostSysctls {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			return fmt.Errorf("read sysctl %s: %w", k, err)
		}
		s.Sysctls[k] = strings.TrimSpace(string(v))
	}
	for _, m := range nodeMounts {
		if _, err := os.Stat(m.target); errors.Is(err, fs.ErrNotExist) {
			s.CreatedDirs = append(s.CreatedDirs, m.target)
		}
	}
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	if err := os.MkdirAll(p.Data, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", p.Data, err)
	}
	if err := os.WriteFile(statePath(p), data, 0o600); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

// restoreState puts the saved sysctls back and removes the mount targets
// the nodes created, when they are empty. No state file means nothing to
// undo.
func restoreState(p Paths) error {
	data, err := os.ReadFile(statePath(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read state: %w", err)
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("parse state: %w", err)
	}
	var errs []error
	for k, v := range s.Sysctls {
		if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s: %w", k, err))
		}
	}
	for _, d := range s.CreatedDirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
