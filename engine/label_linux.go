package engine

import "golang.org/x/sys/unix"

// cpuProfiling reports whether this process records a CPU profile now: the
// Go runtime arms the process's ITIMER_PROF at the profile's rate when one
// starts (runtime.setProcessCPUProfilerTimer, whatever starts it:
// pprof.StartCPUProfile, net/http/pprof, go test -cpuprofile) and disarms it
// when it stops. A timer someone else armed, or an error, reads as on:
// labels then cost what they always did, and are never missing.
func cpuProfiling() bool {
	it, err := unix.Getitimer(unix.ITIMER_PROF)
	return err != nil || it.Interval != (unix.Timeval{}) || it.Value != (unix.Timeval{})
}
