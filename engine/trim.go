package engine

import (
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/gcepoch"
)

// Idle pools give memory back, the way sync.Pool does across GCs: the
// frames and roots a pool held unused for a whole GC cycle (its low-water
// mark since the last trim) are dropped at the next one, for the GC to
// take. A burst of flows grows the pools; steady state after it needs only
// what it uses, so the rest goes within a cycle or two. A pool at or below
// trimFloor idle items is left alone, and its timer stops.
//
// Dropping is safe: a dropped frame's generation word stays with it, so a
// stale External still finds it stale (it keeps the frame alive, and it is
// never reused); a dropped root stays released, so a stale root's calls
// still do nothing.

// trimFloor is the idle items a pool may keep without a trim timer.
const trimFloor = 256

// trimEvery is how often an armed trim timer looks for a new GC cycle.
const trimEvery = time.Second

// trimState is the loop's trimming state. Loop-owned.
type trimState struct {
	freeLow  int    // the fewest free frames since the last trim
	flowsLow int    // the fewest free root flows since the last trim
	armed    bool   // trimTick is scheduled
	epoch    uint64 // gcepoch.Epoch() at the last trim
}

func (e *engine) armTrim() {
	e.trim.armed = true
	e.r.After(trimEvery, trimTick, unsafe.Pointer(e), 0)
}

// trimTick trims once per GC cycle, and stays armed while a pool holds
// more than trimFloor idle items.
func trimTick(arg unsafe.Pointer, _ uint64) {
	e := (*engine)(arg)
	if ep := gcepoch.Epoch(); ep != e.trim.epoch {
		e.trim.epoch = ep
		e.trimPools()
	}
	e.rootMu.Lock()
	shared := e.rootFree.n
	e.rootMu.Unlock()
	if e.stats.FramesFree > trimFloor || e.rootLocal.n > trimFloor || shared > trimFloor || e.stats.RootFlowsFree > trimFloor {
		e.armTrim()
		return
	}
	e.trim.armed = false
}

// trimPools drops what the pools held unused since the last trim.
func (e *engine) trimPools() {
	if k := e.trim.freeLow; k > 0 {
		keep := e.stats.FramesFree - k
		if keep == 0 {
			e.free = nil
		} else {
			f := e.free
			for i := 1; i < keep; i++ {
				f = f.next
			}
			f.next = nil // the rest: frames nobody took since the last trim
		}
		e.stats.FramesFree = keep
		e.stats.Trimmed += k
	}
	e.trim.freeLow = e.stats.FramesFree
	for k := e.trim.flowsLow; k > 0 && e.freeRootFlows != nil; k-- {
		// Root flows nobody took since the last trim.
		fl := e.freeRootFlows
		e.freeRootFlows = fl.nextBranch
		fl.nextBranch = nil
		e.stats.RootFlowsFree--
		e.stats.Trimmed++
	}
	e.trim.flowsLow = e.stats.RootFlowsFree
	e.stats.Trimmed += e.rootLocal.trim()
	e.rootMu.Lock()
	e.stats.Trimmed += e.rootFree.trim()
	e.rootMu.Unlock()
}

// trim drops the oldest roots that were not needed since the last trim,
// keeping the quarantine, and reports how many.
func (l *rootList) trim() int {
	k := min(l.low, l.n-rootQuarantine)
	for i := 0; i < k; i++ {
		rt := l.head
		l.head = rt.nextFree()
		rt.Steps.next = nil
	}
	if l.head == nil {
		l.tail = nil
	}
	l.n -= max(k, 0)
	l.low = l.n
	return max(k, 0)
}
