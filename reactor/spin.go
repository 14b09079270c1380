package reactor

import "time"

// NoSpin as Options.Spin turns spinning off: a loop that runs out of work
// sleeps at once, whatever the traffic.
const NoSpin time.Duration = -1

// The adaptive spin (Options.Spin 0) learns, from the loop's own wake-ups,
// whether work posted from other threads arrives soon after the loop went
// to sleep: the ping-pong of two reactors handing work back and forth (a
// contended Mutex, a request and its reply). Only then does the loop spin
// before it sleeps, for about twice the gap it saw, so the next post finds
// it awake and neither side pays the eventfd write and the thread wake-up
// (3-5 µs on a VM, against a hand-over of well under a microsecond between
// two awake loops).
//
// A loop woken only by I/O or by its timers learns nothing and never spins,
// nor does a loop whose posts come later than adaptiveMaxSpin after it went
// to sleep: an idle server, or one driven by its sockets, keeps sleeping at
// once. Two spins in a row that find nothing turn spinning off again, and
// each time that happens before a spin finds work again doubles the number
// of quick wake-ups the loop lets pass before it tries again (up to
// adaptiveMaxCool): where the spinning loop itself keeps the poster off the
// CPU (one CPU for both), spins become rare instead of costing every
// hand-over their length. So a reactor that stops receiving posts spins at
// most twice more. See profiles/README.md, "Adaptive
// spin".
const (
	// adaptiveMaxSpin bounds a learned spin, and so the time ready I/O can
	// wait behind one (a spin looks at posted work and timers only); it is
	// also maxSpinPerTurn, the spinning a turn may do before it looks.
	adaptiveMaxSpin = 25 * time.Microsecond
	// adaptiveMinSpin is the shortest learned spin: a post that came right
	// after the loop slept says the partner answers fast, but a spin
	// shorter than a wake-up's round trip would end just before the answer
	// (a 2 µs fixed spin measured worse than none).
	adaptiveMinSpin = 5 * time.Microsecond
	// adaptiveMisses is how many spins in a row must find nothing before
	// the loop stops spinning: one late partner (its thread preempted)
	// should not cost the wake-ups of relearning.
	adaptiveMisses = 2
	// adaptiveMaxCool bounds the quick wake-ups let pass after failed spins.
	adaptiveMaxCool = 63
)

// adaptiveSpin is the loop-owned state of the adaptive spin. Its methods are
// the whole policy; the loop reports to it and asks it for a budget.
type adaptiveSpin struct {
	budget   time.Duration // how long to spin before the next sleep; 0: sleep at once
	cool     uint8         // quick wake-ups still to let pass before learning again
	coolNext uint8         // cool after the next failed spin (0, 1, 3, 7, ...)
	misses   uint8         // spins in a row that found nothing
}

// wokeByPost reports a wake-up from a sleep of slept, ended by work posted
// from another thread (the loop's eventfd).
func (a *adaptiveSpin) wokeByPost(slept time.Duration) {
	if slept > adaptiveMaxSpin {
		// Posts come slower than a spin is worth; a spin already learned
		// stays until its own misses end it (this sleep may have followed
		// one, or a partner's thread that lost its CPU for a while).
		return
	}
	if a.cool > 0 {
		a.cool--
		return
	}
	a.budget = min(max(a.budget, 2*slept, adaptiveMinSpin), adaptiveMaxSpin)
}

// spun reports a spin that found work after took, or found none (found
// false, took the whole budget).
func (a *adaptiveSpin) spun(found bool, took time.Duration) {
	if found {
		a.misses = 0
		a.coolNext = 0
		// A partner slower than half the budget: give it room.
		a.budget = min(max(a.budget, 2*took), adaptiveMaxSpin)
		return
	}
	if a.misses++; a.misses < adaptiveMisses {
		return // one miss in a row: a partner that was late once
	}
	a.misses = 0
	a.budget = 0
	a.cool = a.coolNext
	a.coolNext = min(2*a.coolNext+1, adaptiveMaxCool)
}
