//go:build race

package timerwheel

// raceEnabled scales the randomized tests down, because the race detector
// slows every memory access.
const raceEnabled = true
