package controlplane

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Process is one child program whose output goes to a log file. It runs in
// its own process group with a parent-death signal: a terminal's Ctrl-C
// reaches only its parent, and it dies with its parent in any case.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// StartProcess starts bin with args as the child called name, appending its
// stdout and stderr to logDir/<name>.log. A nil env inherits this process's
// environment; otherwise env is the child's whole environment.
func StartProcess(name, logDir, bin string, env []string, args ...string) (*Process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Own process group so a terminal's Ctrl-C reaches only us, and the
	// parent-death signal kills the child when this process dies in any way.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Name is the name the process was started with.
func (p *Process) Name() string { return p.name }

// LogPath is the file that receives the process's output.
func (p *Process) LogPath() string { return p.logPath }

// Pid is the process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop asks the process group to terminate, kills it after grace, and
// returns once the process has ended.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	pgid := -p.cmd.Process.Pid
	if err := syscall.Kill(pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("terminate %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s: %w", p.name, err)
	}
	<-p.done
	return nil
}

// LogTail returns the last bytes of the process log, for error messages.
func (p *Process) LogTail() string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	const max = 2048
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return string(data)
}
