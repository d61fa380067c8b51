package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
)

// CPUs the children are pinned to: the servers (app, proxies, baseline)
// share serverCPU, the load generator and clients have clientCPU. A child
// started on anyCPU is not pinned and has GOMAXPROCS of its own (every
// core).
const (
	serverCPU = 0
	clientCPU = 1
	anyCPU    = -1
)

// child is one running part of the bench.
type child struct {
	role string
	// served is the pid of the process that serves, when the role runs
	// it as a child of its own (served.Pid); 0 when the role serves.
	served int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Scanner
}

// spawn starts the bench binary as role, pinned to cpu (with
// GOMAXPROCS=1) unless cpu is negative, and sends it spec as the first
// line of its stdin (a spec can outgrow an argument).
func spawn(role string, spec any, cpu int) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own binary: %w", err)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode %s spec: %w", role, err)
	}
	args := []string{self, "-role", role}
	env := os.Environ()
	if cpu >= 0 {
		args = append([]string{"taskset", "-c", strconv.Itoa(cpu)}, args...)
		env = append(env, "GOMAXPROCS=1")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("pipe to %s: %w", role, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("pipe from %s: %w", role, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", role, err)
	}
	if _, err := fmt.Fprintf(stdin, "%s\n", data); err != nil {
		stdin.Close()
		return nil, fmt.Errorf("send %s its spec: %w (exit: %v)", role, err, cmd.Wait())
	}
	s := bufio.NewScanner(stdout)
	s.Buffer(make([]byte, 64<<10), 16<<20)
	return &child{role: role, cmd: cmd, stdin: stdin, out: s}, nil
}

// read decodes the child's next output line into v.
func (c *child) read(v any) error {
	if !c.out.Scan() {
		err := c.out.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("read from %s: %w (exit: %v)", c.role, err, c.cmd.Wait())
	}
	if err := json.Unmarshal(c.out.Bytes(), v); err != nil {
		return fmt.Errorf("decode %s output %q: %w", c.role, c.out.Text(), err)
	}
	return nil
}

// pid is the serving process's id: the child's (taskset execs the bench
// in place), or the one it runs and reported.
func (c *child) pid() int {
	if c.served != 0 {
		return c.served
	}
	return c.cmd.Process.Pid
}

// stop tells the child to end (its stdin closes) and waits for it.
func (c *child) stop() error {
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w", c.role, err)
	}
	return nil
}

// once runs role to completion and decodes its one output line into v.
func once(role string, spec any, cpu int, v any) error {
	c, err := spawn(role, spec, cpu)
	if err != nil {
		return err
	}
	if err := c.read(v); err != nil {
		c.stop()
		return err
	}
	return c.stop()
}

// emit writes v as the one JSON line a role reports.
func emit(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err = fmt.Fprintf(os.Stdout, "%s\n", data)
	return err
}

// readSpec reads the spec line the orchestrator sends first. It reads
// no further, so that waitParent sees the rest of stdin.
func readSpec() (string, error) {
	var line []byte
	b := make([]byte, 64<<10)
	for {
		n, err := os.Stdin.Read(b)
		line = append(line, b[:n]...)
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			return string(line[:i]), nil
		}
		if err != nil {
			return "", fmt.Errorf("read spec: %w", err)
		}
	}
}

// waitParent blocks until the orchestrator closes stdin.
func waitParent() {
	_, _ = io.Copy(io.Discard, os.Stdin)
}
