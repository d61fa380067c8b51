//go:build race

package nodeproxy

// raceEnabled is set under the race detector, whose slowdown makes
// latency assertions meaningless.
const raceEnabled = true
