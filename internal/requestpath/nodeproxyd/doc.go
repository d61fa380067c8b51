// Package nodeproxyd is the node proxy daemon as it ships: its settings
// (Load, Validate) and the one assembly (Assemble, Run) that turns them into
// running parts, used by cmd/nodeproxy, the tests and the benchmarks alike.
package nodeproxyd
