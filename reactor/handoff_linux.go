//go:build linux

package reactor

import (
	"sync/atomic"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/storerel"
)

// A hand-off between loops: when a loop's callback posts to another
// reactor whose loop is parked (a Mutex handed to a flow waiting there, a
// reply), the poster does not write that reactor's eventfd. It owes the
// reactor a turn instead, and runs it itself, under that reactor's word,
// as soon as its own callback has returned (after the iteration that made
// the post): Go's runtime does the same when it hands a lock to a parked
// goroutine and runs it next. The woken flow runs without a thread
// wake-up, and the reactor's loop stays parked. If the reactor is no
// longer parked by then (its loop woke for I/O or a timer, or a waiter
// assists it), the poster writes the eventfd after all.
//
// The poster runs the turn between its own iterations, outside any of its
// callbacks, so its own loop-owned state is at rest; during that turn the
// poster's goroutine holds both words, and the turn's callbacks see the
// reactor's IsSameThread true, as for an assist (see Assist for what only
// the thread changes). The posted reactor's sleeping flag, which the
// poster cleared in wakeLoop and so owes a kick for, is set again once the
// turn leaves nothing ready, and work found after that is woken for as any
// producer would. A hand-off made by borrowing the parked reactor's word
// (borrow_linux.go: a Mutex handed to a flow there) does not clear the flag
// at all (oweKept): the turn owed then has nothing to give back, and a
// producer that posts to that reactor before the turn runs kicks it as
// it would any parked loop; that turn runs the flows the hand-off made
// ready and nothing else when they are all the reactor has (handOverTurn).

// maxOwedPerPay bounds the turns one payment runs: a chain of hand-offs
// (a turn that posts to a third parked reactor) ends in kicks, not in one
// loop running the whole group.
const maxOwedPerPay = 8

// owe records that the calling loop will run r's turn after its callback,
// instead of waking r; it reports false when the caller is not a real
// loop (then it kicks). Called with r's kick duty taken (sleeping cleared).
func owe(r *Reactor) bool {
	g := goid.Current()
	if r.os.ownThread || !mayBeLoop(g) {
		return false
	}
	me := loopOf(g)
	if me == nil || me == r || !me.os.fastPath {
		return false
	}
	for i := me.owedPaid; i < len(me.owed); i++ {
		if o := &me.owed[i]; o.r == r {
			o.kept = false // one turn pays both posts; it now holds the duty
			return true
		}
	}
	me.owed = append(me.owed, owedTurn{r: r})
	return true
}

// oweKept is owe for the borrower of r's word (xGiveParked), which has
// just made work ready there and found r's sleeping flag set: the calling
// loop owes r a turn and leaves the flag set, instead of clearing it (a
// locked CAS) only to set it again after the turn (a locked store, and a
// last look for work). With the flag set, a producer that posts to r
// meanwhile kicks it, as for any parked loop; r's loop then wakes, waits
// for its word if the turn holds it, and runs what is left, and the turn
// (which finds r no longer parked) wakes it again at worst. It reports
// false when the caller is not a real loop that may owe (then the caller
// wakes r as before). g is the borrower's identity (r's loopG).
func oweKept(r *Reactor, g uintptr) bool {
	// loopOf, its slot first: the borrower is almost always a loop in its
	// own slot (a Mutex handed over from a flow), so the hint bit, which
	// only tells non-loops away cheaply, is asked only off the slot
	// (about 15 instructions of a crossing's ~70 here, for a Mutex handed
	// between reactors).
	me := loopSlot(g).Load()
	if me == nil || me.os.loopID != g {
		if !mayBeLoop(g) {
			return false
		}
		if me = loopOf(g); me == nil {
			return false
		}
	}
	if me == r || !me.os.fastPath {
		return false
	}
	for i := me.owedPaid; i < len(me.owed); i++ {
		if me.owed[i].r == r {
			return true // a turn is owed already: it runs this work too
		}
	}
	me.owed = append(me.owed, owedTurn{r: r, kept: true})
	return true
}

// loopSlots finds the reactor whose loop a goroutine runs without the
// loops map (an interface hash and a trie walk, a few percent of a
// contended Mutex section across reactors, whose every other hand-over
// asks owe). A slot, picked by a hash of a goroutine's identity, holds the
// first running loop whose identity hashes there, with that identity
// (osLoop.loopID) to check; a loop whose slot was taken is found in loops.
// A goroutine only asks about itself, and a loop sets its slot after its
// loopID and clears it before Run returns, while its goroutine is alive:
// an identity may be reused once its goroutine has exited (package goid),
// but two live goroutines never share one, so a slot whose loopID is the
// caller's is the caller's own loop (TestLoopOfAfterIdentityReuse).
var loopSlots [256]atomic.Pointer[Reactor]

func loopSlot(g uintptr) *atomic.Pointer[Reactor] {
	return &loopSlots[uint64(g)*0x9E3779B97F4A7C15>>56]
}

// loopsOffSlot counts the running loops whose slot another loop holds:
// only those are found in loops alone. While it is 0, a goroutine that is
// not in its slot is no loop (isLoop), and the map is not read.
var loopsOffSlot atomic.Int32

// inOwnSlot reports whether g, the caller, is the running loop its slot
// holds.
func inOwnSlot(g uintptr) bool {
	r := loopSlot(g).Load()
	return r != nil && r.os.loopID == g
}

// mayBeOffSlot reports whether a running loop may be missing from its
// slot (isLoop then asks loops).
func mayBeOffSlot() bool { return loopsOffSlot.Load() != 0 }

// loopOf returns the reactor whose loop the calling goroutine, g, runs, or
// nil when it runs none.
func loopOf(g uintptr) *Reactor {
	if r := loopSlot(g).Load(); r != nil && r.os.loopID == g {
		return r
	}
	if v, ok := loops.Load(g); ok {
		return v.(*Reactor)
	}
	return nil
}

// payOwed runs the turn of each reactor this loop owes one, or wakes it.
// Loop only.
func (r *Reactor) payOwed() {
	me := r.loopG.Load()
	for i := 0; i < len(r.owed); i++ {
		o := r.owed[i]
		r.owed[i] = owedTurn{}
		r.owedPaid = i + 1
		switch {
		case o.kept:
			if i >= maxOwedPerPay || !o.r.runKeptTurn(me) {
				o.r.wakeLoop()
			}
		case i >= maxOwedPerPay || !o.r.runHandedOff(me):
			o.r.kickNow()
		}
	}
	r.owed = r.owed[:0]
	r.owedPaid = 0
}

// runHandedOff runs one turn of r, whose loop is parked and whose kick
// duty the caller holds, under r's word; false if r is not parked (the
// caller then kicks).
func (r *Reactor) runHandedOff(me uintptr) bool {
	if !r.loopG.CompareAndSwap(parkedG, me) {
		return false
	}
	more := r.borrowedTurn()
	restored := false
	if !more && !r.closed.Load() {
		// Give the duty back: producers that saw sleeping cleared did not
		// kick, so look again once it is set.
		r.sleeping.Store(true)
		restored = true
		more = r.hasReadyWork()
	}
	r.loopGen++ // before the release: Loops made in this hold stop being held (leaveOutermost)
	storerel.Uintptr(&r.loopG, parkedG)
	switch {
	case !more:
	case restored:
		r.wakeLoop()
	default:
		r.kickNow()
	}
	return true
}

// runKeptTurn runs one turn of r, whose loop is parked and whose sleeping
// flag was left set (oweKept), under r's word; false if r is not parked
// (the caller then wakes it). Nobody holds r's kick duty, so nothing is
// given back: a producer that posted meanwhile saw the flag and kicked.
// Work the turn leaves wakes r as a post would.
func (r *Reactor) runKeptTurn(me uintptr) bool {
	if !r.loopG.CompareAndSwap(parkedG, me) {
		return false
	}
	more := r.handOverTurn()
	r.loopGen++ // before the release: Loops made in this hold stop being held (leaveOutermost)
	storerel.Uintptr(&r.loopG, parkedG)
	if more {
		r.wakeLoop()
	}
	return true
}

// handOverTurn is the kept turn's borrowedTurn when the flows the
// hand-off made ready are all r has: its engine's ready flows run, and
// nothing else is looked at, as Go's runtime runs the goroutine a lock
// was handed to without a pass of its scheduler (a Mutex
// section handed between reactors pays one such turn per crossing, where
// the full turn's iteration looked at every source and then at the
// deadline). Every other source of r's work has its own wake-up already:
// a task a goroutine posts or a loop posts meanwhile kicked r (its
// sleeping flag is set, oweKept), a due timer fires r's timerfd, and a
// parked loop left its local queue empty (a turn that left local work
// woke it). So what may be ready is the engine's, and the turn is
// RunReady. Whatever the flows leave (more flows ready, a local post, a
// timer they added, an attachment's work) goes on as borrowedTurn would
// take it: its iterations and its timerfd; the flows see what they would
// on a full turn (the loop word, IsSameThread, CoarseNow's stale-clock
// rule, Iterations counting this turn's one iteration).
//
// Anything else found before the flows run (a source that is not empty,
// an armed timerfd, a closed reactor) takes the full turn instead.
func (r *Reactor) handOverTurn() (more bool) {
	if !r.local.empty() || r.work.timers || r.work.foreign || r.os.armedAt != 0 ||
		!r.inbox.Idle() || r.overflow.active.Load() || r.closed.Load() {
		return r.borrowedTurn()
	}
	r.os.assists++      // the flows may watch or unwatch: the loop's events may be stale
	r.m.nowStale = true // borrowedTurn's clock rule
	r.m.iterations++    // one iteration, as the full turn's would count
	if *r.extMay.Load() {
		more = r.ext.Load().run.RunReady()
	}
	if r.closed.Load() {
		return false // borrowedTurn's rule: a closed reactor's shutdown takes the rest
	}
	if more || !r.local.empty() || r.work.timers || r.work.foreign || !r.inbox.Idle() || r.overflow.active.Load() {
		// The rest of a turn: the iterations the full one had left, then
		// the timerfd for whatever deadline they leave.
		for i := 1; i < maxIterPerTurn; i++ {
			if more = r.iterate(); !more || r.closed.Load() {
				break
			}
		}
		if !more && !r.closed.Load() && r.armTimer() != nil {
			more = true
		}
	}
	return more
}
