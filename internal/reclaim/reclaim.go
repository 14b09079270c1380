// Package reclaim gives the memory the project's pools drop after a burst
// back to the operating system without waiting for the runtime.
//
// A pool that trims (the engine's frames and roots, stepsd's requests)
// only makes its items garbage. On a server that has gone idle nothing
// allocates, so no GC runs until the runtime's forced one (two minutes),
// and the heap the burst grew stays resident. Dropped tells this package
// how many bytes a trim gave up; once at least Threshold have been given
// up, a goroutine of its own waits Settle (so that the trims a first one
// starts, such as the engine dropping the roots stepsd just released,
// count in the same collection), then calls debug.FreeOSMemory: one GC,
// then the freed pages go back to the OS at once.
//
// A plain runtime.GC would leave the pages to the runtime's background
// scavenger, which is paced to about 1% of the CPUs: on an idle machine it
// returned stepsd's burst within a second of the GC, but on the loaded
// 2-core CI box it had returned nothing 6 s later (RSS 44 MiB with 4.4 MiB
// of heap in use; profiles/notes/2026-11-27-memory-after-burst.md).
// FreeOSMemory runs on this package's goroutine, never on a loop, and the
// loops keep running meanwhile.
//
// # Threads
//
// Dropped is safe from any goroutine: one atomic add, and a goroutine
// started at most once per Settle. It never blocks its caller, so a
// reactor loop may call it.
//
// # Lifetimes
//
// At most one collection goroutine runs at a time; bytes dropped while it
// runs count towards the next. Collections that keep coming back off: each
// one that follows the previous within MaxInterval waits twice as long
// after it as the one before did (Settle, then 3 s, 6 s, ... up to
// MaxInterval). A burst's memory takes two or three collections to come
// back as its pools shrink over a few seconds, and gets them at once;
// under a load that comes and goes every few seconds, each lull's trims
// drop a burst's worth again, and a forced GC and a full scavenge every
// Settle would tax the whole process (a mark of its whole heap, and the
// pages the next burst faults in again) for memory it takes back anyway.
//
// # Turning it off
//
// SetEnabled(false) (engine.SetForcedGC for users) stops it for the whole
// process: for a program that runs its own GC policy (GOGC=off, a memory
// limit, its own FreeOSMemory), where a collection it did not ask for is a
// pause it did not plan. The pools still trim; what they drop is collected
// whenever the runtime next runs.
package reclaim

import (
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Threshold is how many dropped bytes make a collection worth its cost: a
// full GC cycle and a scavenge, on a goroutine of its own.
const Threshold = 1 << 20

// Settle is how long a collection waits after the trim that asked for it.
const Settle = 1500 * time.Millisecond

// MaxInterval caps the back-off between collections; a collection asked
// for longer than this after the last one ended starts the back-off anew.
const MaxInterval = time.Minute

var (
	off     atomic.Bool // SetEnabled(false)
	dropped atomic.Int64
	running atomic.Bool
	runs    atomic.Uint64
	// lastEnd is when the last collection ended (zero: none yet), and
	// backoff the least time from it to the next one. Only the
	// collection goroutine touches them, and one runs at a time (running).
	lastEnd time.Time
	backoff time.Duration
)

// Dropped records that a pool gave n bytes to the garbage collector, and
// starts a collection when enough have been given up since the last one.
func Dropped(n int) {
	if n <= 0 || off.Load() {
		return
	}
	if dropped.Add(int64(n)) >= Threshold && running.CompareAndSwap(false, true) {
		go collect()
	}
}

// SetEnabled turns collections on (the default) or off for the whole
// process. Turned off, Dropped counts nothing and a collection already
// waiting out its Settle ends without collecting. Safe from any goroutine.
func SetEnabled(on bool) {
	off.Store(!on)
	if !on {
		dropped.Store(0)
	}
}

// Runs reports how many collections this package has run, for tests.
func Runs() uint64 { return runs.Load() }

func collect() {
	prevEnd, prevBackoff := lastEnd, backoff
	wait := Settle
	if since := time.Since(lastEnd); lastEnd.IsZero() || since > MaxInterval {
		backoff = Settle // quiet since: the back-off starts again
	} else {
		backoff = min(2*backoff, MaxInterval)
		wait = max(wait, backoff-since)
	}
	time.Sleep(wait)
	if off.Load() {
		// Turned off while it waited: nothing was collected, so the
		// back-off stays where the last real collection left it.
		lastEnd, backoff = prevEnd, prevBackoff
	} else {
		dropped.Store(0)
		debug.FreeOSMemory()
		runs.Add(1)
		lastEnd = time.Now()
	}
	running.Store(false)
	if dropped.Load() >= Threshold && running.CompareAndSwap(false, true) {
		go collect() // more was dropped while this one ran
	}
}
