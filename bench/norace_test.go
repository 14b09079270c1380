//go:build !race

package bench

// raceEnabled skips the allocation checks of real reactors: under the race
// detector their goroutines' synchronization allocates.
const raceEnabled = false
