//go:build race

package netbench

// raceEnabled skips the allocation checks: under the race detector
// synchronization allocates.
const raceEnabled = true
