// Command pause holds a pod sandbox's namespaces, like Kubernetes' pause
// container: it waits for SIGINT or SIGTERM and exits 0, and as the pod's
// PID 1 (shared process namespace) it reaps every zombie child on SIGCHLD.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is printed by -v.
const version = "sandgate-pause 1.0"

func main() {
	if len(os.Args) > 1 {
		os.Exit(usage(os.Args[1:], os.Stdout, os.Stderr))
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}
	os.Exit(wait(signals, reap, os.Stderr))
}

// usage answers -v and -h; any other argument is an error.
func usage(args []string, stdout, stderr io.Writer) int {
	switch args[0] {
	case "-v", "--version":
		fmt.Fprintln(stdout, version)
		return 0
	case "-h", "--help":
		fmt.Fprintln(stdout, "Usage: pause [-v]\n\nHolds a pod sandbox: exits 0 on SIGINT or SIGTERM, reaps zombie children on SIGCHLD.")
		return 0
	}
	fmt.Fprintf(stderr, "pause: unexpected argument %q (try -h)\n", args[0])
	return 2
}

// wait reaps on every SIGCHLD until SIGINT or SIGTERM arrives, then
// returns the exit code 0.
func wait(signals <-chan os.Signal, reap func() error, stderr io.Writer) int {
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			fmt.Fprintf(stderr, "Shutting down, got signal: %v\n", sig)
			return 0
		}
		if err := reap(); err != nil {
			fmt.Fprintf(stderr, "pause: reap children: %v\n", err)
		}
	}
	return 0
}

// reap collects every child that has exited, without blocking. SIGCHLD
// signals coalesce, so one signal may stand for several children.
func reap() error {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ECHILD), err == nil && pid <= 0:
			return nil
		case err != nil:
			return err
		}
	}
}
