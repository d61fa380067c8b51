package main

import (
	"fmt"

	"github.com/sandgate/sandgate/bench/origin"
	"github.com/sandgate/sandgate/bench/webapp"
)

// app is an upstream app every way is measured against.
type app struct {
	// Name labels the app in the report; Role is the child role serving it.
	Name, Role string
	// Sizes are the body sizes it is asked for.
	Sizes []int
	// path asks the app for a body of size bytes.
	path func(size int) string
}

// The apps: the fasthttp origin, the library's own limit that answers in
// microseconds, and a net/http app that renders a template per request,
// like the Python and Node servers agents run.
var (
	fastApp = app{Name: "fasthttp", Role: "app", Sizes: []int{1 << 10, 64 << 10},
		path: func(size int) string { return fmt.Sprintf("%s%d", origin.BytesPath, size) }}
	pageApp = app{Name: "net/http template", Role: "webapp", Sizes: []int{webapp.PageSize()},
		path: func(int) string { return webapp.PagePath }}
	apps = []app{fastApp, pageApp}
)

// crowdSandboxes and crowdSessions shape the many-users run: this many
// users' sandboxes on n1, and this many sessions spread over them.
const (
	crowdSandboxes = 100
	crowdSessions  = 1000
)

// cell is one load setting of one way.
type cell struct {
	Way   way `json:"way"`
	Size  int `json:"size"`
	Conns int `json:"conns"`
}

// plan lists the closed-loop cells measured against a: the matrix of
// (a)-(d), the hop (fasthttp app only) and the many-users run; smoke takes
// each way once at 64 connections.
func plan(a app, c config) []cell {
	conns := []int{1, 16, 64}
	if c.smoke {
		conns = []int{64}
	}
	var cells []cell
	for _, size := range a.Sizes {
		for _, n := range conns {
			for _, w := range c.frontWays() {
				cells = append(cells, cell{w, size, n})
			}
		}
	}
	if a.Role == fastApp.Role {
		for _, h := range hopCells(c.smoke) {
			cells = append(cells, cell{viaHop, h.Size, h.Conns})
		}
	}
	return append(cells, cell{viaCrowd, a.Sizes[0], 64})
}

// frontWays are the ways the data table compares: (a) to (d), and (e)
// when the bench was given Traefik.
func (c config) frontWays() []way {
	ways := []way{direct, viaProxy, viaBase, viaBare}
	if c.traefik != "" {
		ways = append(ways, viaTraefik)
	}
	return ways
}

// hopCells are the cross-node hop's settings.
func hopCells(smoke bool) []cell {
	if smoke {
		return []cell{{viaHop, 1 << 10, 64}}
	}
	return []cell{{viaHop, 1 << 10, 1}, {viaHop, 1 << 10, 64}, {viaHop, 64 << 10, 64}}
}
