//go:build linux && race

package netio

import (
	"runtime"
	"unsafe"
)

// Under the race detector, sysRead and sysWrite tell it what the kernel
// did to their buffer, as unix.Read and unix.Write do: the kernel's stores
// and loads are otherwise invisible to it, and a goroutine racing with
// them would go unreported.
const raceenabled = true

// ioSync orders a write before the read that returns its bytes, as
// unix's does: data that crossed a socket is not a race.
var ioSync int64

func raceReadRange(addr unsafe.Pointer, n int)  { runtime.RaceReadRange(addr, n) }
func raceWriteRange(addr unsafe.Pointer, n int) { runtime.RaceWriteRange(addr, n) }
func raceAcquire()                              { runtime.RaceAcquire(unsafe.Pointer(&ioSync)) }
func raceReleaseMerge()                         { runtime.RaceReleaseMerge(unsafe.Pointer(&ioSync)) }
