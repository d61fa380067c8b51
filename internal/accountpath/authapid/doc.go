// Package authapid is the auth API daemon as it ships: its settings (Load,
// Validate) and the one assembly (Assemble, Run) that turns them into
// running parts, used by cmd/authapi, the tests and the benchmarks alike.
package authapid
