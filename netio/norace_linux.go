//go:build linux && !race

package netio

import "unsafe"

// Without the race detector the annotations are constant-false branches
// that the compiler drops: sysRead and sysWrite pay nothing for them.
const raceenabled = false

func raceReadRange(unsafe.Pointer, int)  {}
func raceWriteRange(unsafe.Pointer, int) {}
func raceAcquire()                       {}
func raceReleaseMerge()                  {}
