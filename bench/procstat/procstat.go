// Package procstat reads a process's memory and CPU figures from /proc.
package procstat

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// RSS returns the resident set size (VmRSS) of process pid in bytes; pid
// 0 means this process.
func RSS(pid int) (int64, error) { return field(pid, "VmRSS:") }

// Peak returns the peak resident set size (VmHWM) of process pid in bytes.
func Peak(pid int) (int64, error) { return field(pid, "VmHWM:") }

// field reads a kB figure of /proc/<pid>/status.
func field(pid int, name string) (int64, error) {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read process status: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), name)
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse %s %q: %w", name, rest, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("%s missing from %s", name, path)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times; it is 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// CPU returns the user plus system CPU time process pid has used.
func CPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read process stat: %w", err)
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing parenthesis, where field 3 (state) starts.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short process stat %q", s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse process stat %q", s)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// CPUStall returns the machine's total CPU pressure stall so far
// (/proc/pressure/cpu, "some"): the time at least one runnable task waited
// for a CPU. Its growth over a run tells how much other work competed for
// the cores.
func CPUStall() (time.Duration, error) {
	data, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, fmt.Errorf("read CPU pressure: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	for f := range strings.FieldsSeq(line) {
		if v, ok := strings.CutPrefix(f, "total="); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse CPU pressure %q: %w", v, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("no total in CPU pressure line %q", line)
}

// Syscalls returns how many read and write system calls process pid has
// made (/proc/<pid>/io, syscr plus syscw): the reads, writes, recvs and
// sends of its sockets among them.
func Syscalls(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, fmt.Errorf("read process io: %w", err)
	}
	var n int64
	found := 0
	for line := range strings.Lines(string(data)) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok || (name != "syscr" && name != "syscw") {
			continue
		}
		c, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse process io %s %q: %w", name, v, err)
		}
		n += c
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("syscr or syscw missing from /proc/%d/io", pid)
	}
	return n, nil
}
