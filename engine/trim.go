package engine

import (
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/reclaim"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Idle pools give memory back. While a pool holds more than trimFloor idle
// items, a timer on the loop looks at it every trimEvery and drops what it
// held unused for the whole period (its low-water mark since the last
// look): a burst of flows grows the pools, and steady state after it needs
// only what it uses, so the rest goes within two periods of the burst's
// end. The timer runs only while a pool is above the floor, so an idle or
// steady loop pays nothing for it, and steady state never allocates
// because of it: what it takes, it took within the last period, and that
// is never dropped.
//
// Dropping only makes the items garbage; on an idle server no GC would
// come to collect them for minutes. So a trim tells internal/reclaim how
// many bytes it gave up, and a trim of a burst's worth (a MiB or more)
// gets a GC and the freed pages returned to the OS shortly after. The
// loop's byte arena unmaps its idle slabs, and the reactor's timer wheel
// drops its empty node chunks, at the same time.
//
// Frames are allocated one by one, not in chunks: one frame kept (in a
// root's spares, in the build pool, or live) would keep its whole chunk
// from the GC, and after a burst the few frames kept were spread over
// nearly every chunk.
//
// Dropping is safe: a dropped frame's generation word stays with it, so a
// stale External still finds it stale (it keeps the frame alive, and it is
// never reused); a dropped root stays released, so a stale root's calls
// still do nothing.

// SetForcedGC says whether a trim that drops a burst's worth of memory (a
// MiB or more) gets a GC and the freed pages returned to the OS shortly
// after (debug.FreeOSMemory, on a goroutine of its own, backing off while
// bursts keep coming). On by default. Turn it off where the program runs
// its own GC policy (GOGC=off, a memory limit, its own FreeOSMemory), for
// which a collection it did not ask for is a pause it did not plan: the
// pools still trim, and what they drop is collected when the runtime next
// runs. It is one setting for the whole process (every engine, stepsd's
// pools too), safe from any goroutine; turning it off also stops a
// collection already waiting.
func SetForcedGC(on bool) { reclaim.SetEnabled(on) }

// trimFloor is the idle items a pool may keep without a trim timer.
const trimFloor = 256

// trimEvery is how often an armed trim timer drops what stayed unused.
const trimEvery = time.Second

// trimState is the loop's trimming state. Loop-owned.
type trimState struct {
	freeLow  int  // the fewest free frames since the last trim
	flowsLow int  // the fewest free root flows since the last trim
	armed    bool // trimTick is scheduled
}

func (e *engine) armTrim() {
	e.trim.armed = true
	reactor.X.After(e.r, trimEvery, trimTick, unsafe.Pointer(e), 0)
}

// trimTick trims, and stays armed while a pool holds more than trimFloor
// idle items.
func trimTick(arg unsafe.Pointer, _ uint64) {
	e := (*engine)(arg)
	e.trimPools()
	// The reactor lets go of its current Promise slab: the results of its
	// Promises whose holders dropped them must not stay reachable from an
	// idle reactor (only a kept Promise keeps its slab). The next Promise
	// makes a new slab; a caller that claims from this one meanwhile still
	// gets a slot of its own (promise_slab.go). A Promise's end (a
	// success or a failure, endRunWaited) arms this tick, so a dropped result is reachable from the reactor
	// for at most about trimEvery.
	e.promises.cur.Store(nil)
	e.loopSlab, e.loopFree = nil, 0 // and of the loop's own (startPromiseNow)
	e.rootMu.Lock()
	shared := e.rootFree.n
	e.rootMu.Unlock()
	if e.stats.FramesFree > trimFloor || e.rootLocal.n() > trimFloor || shared > trimFloor || e.stats.RootFlowsFree > trimFloor {
		e.armTrim()
		return
	}
	e.trim.armed = false
}

// The sizes a trim reports to reclaim.
const (
	frameBytes = int(unsafe.Sizeof(Steps{}))
	flowBytes  = int(unsafe.Sizeof(flow{}))
	rootBytes  = int(unsafe.Sizeof(root{}))
)

// trimPools drops what the pools held unused since the last trim.
func (e *engine) trimPools() {
	bytes := 0
	if k := e.trim.freeLow; k > 0 {
		keep := e.stats.FramesFree - k
		if keep == 0 {
			e.dropFrames(e.free)
			e.free = nil
		} else {
			f := e.free
			for i := 1; i < keep; i++ {
				f = f.next
			}
			e.dropFrames(f.next) // the rest: frames nobody took since the last trim
			f.next = nil
		}
		e.stats.FramesFree = keep
		e.stats.Trimmed += k
		bytes += k * frameBytes
	}
	e.trim.freeLow = e.stats.FramesFree
	for k := e.trim.flowsLow; k > 0 && e.freeRootFlows != nil; k-- {
		// Root flows nobody took since the last trim.
		fl := e.freeRootFlows
		e.freeRootFlows = fl.nextBranch
		fl.nextBranch = nil
		fl.prevReady = nil // parked's hint: a live flow's may point here, and must not keep another
		e.stats.RootFlowsFree--
		e.stats.Trimmed++
		bytes += flowBytes
	}
	e.trim.flowsLow = e.stats.RootFlowsFree
	n, b := e.rootLocal.trim()
	e.rootMu.Lock()
	n2, b2 := e.rootFree.trim()
	e.rootMu.Unlock()
	e.stats.Trimmed += n + n2
	bytes += b + b2
	e.ar.Trim() // munmap: the OS has those pages back at once
	bytes += e.r.TrimTimers()
	reclaim.Dropped(bytes)
}

// trim is rootList's trim for the loop's ring.
func (l *rootRing) trim() (n, bytes int) {
	k := min(l.low, l.n()-rootQuarantine)
	for i := 0; i < k; i++ {
		j := l.head % maxRootLocal
		rt := l.buf[j]
		l.buf[j] = nil
		l.head++
		bytes += rootBytes + int(rt.spareN)*frameBytes
		rt.dropSpares()
		if fl := rt.Steps.fl; fl != nil {
			fl.prevReady = nil // parked's hint (see trimPools)
			bytes += flowBytes
		}
	}
	l.low = l.n()
	return max(k, 0), bytes
}

// trim drops the oldest roots that were not needed since the last trim,
// keeping the quarantine, with what each kept across runs (its flow, its
// spare frames), and reports how many and their bytes.
func (l *rootList) trim() (n, bytes int) {
	k := min(l.low, l.n-rootQuarantine)
	for i := 0; i < k; i++ {
		rt := l.head
		l.head = rt.nextFree()
		rt.Steps.next = nil
		bytes += rootBytes + int(rt.spareN)*frameBytes
		rt.dropSpares()
		if fl := rt.Steps.fl; fl != nil {
			fl.prevReady = nil // parked's hint (see trimPools)
			bytes += flowBytes
		}
	}
	if l.head == nil {
		l.tail = nil
	}
	l.n -= max(k, 0)
	l.low = l.n
	return max(k, 0), bytes
}

// dropFrames unlinks the chain of free frames from f on, which the pool
// lets go: a frame's next is left stale when it is dequeued (dequeue), and
// a stale pointer into a chain still linked would keep the rest of it.
// Unlinked, a stale next keeps at most the one frame it points to (its
// allocation: a chunk of up to buildChunk frames for one allocated off
// the loop, freshFrame).
func (e *engine) dropFrames(f *Steps) {
	for f != nil {
		n := f.next
		f.next = nil
		f = n
	}
}

// dropSpares unlinks the spare frames of rt, a root a pool drops: a frame
// that went from a live step's queue to the free list and on to rt's
// spares may still be the stale next of that step (dequeue), and would
// keep the rest of rt's spares (up to spareCap, its built size) with it.
// The root stays released; its spare count goes with its frames.
func (rt *root) dropSpares() {
	for f := rt.spare; f != nil; {
		n := f.next
		f.next = nil
		f = n
	}
	rt.spare, rt.spareN = nil, 0
}
