package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// cpuGap sets (b)'s CPU per request beside (d)'s, each measured in the
// run its profile was taken in, and splits both by the profiles' share
// of samples in system calls.
type cpuGap struct {
	Proxy, Bare cpuSplit
}

// cpuSplit is one way's CPU per request in its profiled run and the
// share of its profile's samples inside a system call.
type cpuSplit struct {
	PerRequest time.Duration
	Syscalls   float64
}

// syscallPart and rest split the CPU per request by the profile's share.
func (s cpuSplit) syscallPart() time.Duration {
	return time.Duration(float64(s.PerRequest) * s.Syscalls)
}

func (s cpuSplit) rest() time.Duration { return s.PerRequest - s.syscallPart() }

// profileGap profiles (b) and then (d) under 64 connections of 1 KiB
// requests, one after the other, and returns both summaries and the gap.
func profileGap(c config, s *servers) (proxyTop, bareTop string, gap *cpuGap, err error) {
	cl := cell{viaProxy, 1 << 10, 64}
	var g cpuGap
	for _, w := range []struct {
		way         way
		debug, name string
		top         *string
		split       *cpuSplit
	}{
		{viaProxy, s.proxyDebug, "proxy-cpu.pprof", &proxyTop, &g.Proxy},
		{viaBare, s.bareDebug, "bare-cpu.pprof", &bareTop, &g.Bare},
	} {
		cl.Way = w.way
		tops, run, err := profileDuring(c, s, cl, 0, map[string]string{w.debug: w.name})
		if err != nil {
			return proxyTop, bareTop, nil, err
		}
		*w.top = tops[w.name]
		share, err := syscallShare(filepath.Join(c.profile, w.name))
		if err != nil {
			return proxyTop, bareTop, nil, err
		}
		*w.split = cpuSplit{PerRequest: run.CPU[servedBy[w.way][0]], Syscalls: share}
	}
	return proxyTop, bareTop, &g, nil
}

// showing is pprof's header line of what a -show filter kept.
var showing = regexp.MustCompile(`Showing nodes accounting for [^,]+, ([0-9.]+)% of`)

// syscallShare is the share of a CPU profile's samples inside a system
// call (the runtime's Syscall6, under every read, write and epoll wait).
func syscallShare(file string) (float64, error) {
	out, err := pprofTop(file, "-show=Syscall6$")
	if err != nil {
		return 0, err
	}
	m := showing.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no share of system calls in pprof's output for %s", file)
	}
	pct, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("parse the share of system calls %q: %w", m[1], err)
	}
	return pct / 100, nil
}

// gapTable writes where (b)'s CPU per request goes beside (d)'s.
func gapTable(p printf, g *cpuGap) {
	p("\nWhere (b)'s CPU per request goes beside (d)'s, each from the run its profile was taken in (64 connections, 1 KiB; " +
		"/proc CPU time per request, split by the profile's share of samples inside a system call):\n\n")
	p("| part | (b) node proxy | (d) bare fasthttp | (b) - (d) | (b) / (d) |\n|---|---|---|---|---|\n")
	row := func(name string, b, d time.Duration) {
		p("| %s | %s | %s | %s | %s |\n", name, us(b), us(d), us(b-d), ratioCell(float64(b), float64(d)))
	}
	row("CPU per request", g.Proxy.PerRequest, g.Bare.PerRequest)
	row("inside system calls", g.Proxy.syscallPart(), g.Bare.syscallPart())
	row("the rest: the proxy's own work, the runtime and fasthttp", g.Proxy.rest(), g.Bare.rest())
}
