//go:build race

package stepsd

// raceEnabled: the race detector makes sync.Pool (under bytebufferpool)
// drop items on purpose, so allocation counts do not hold.
const raceEnabled = true
