package stepsd

import (
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A request's Timeout is kept by its shard, not by a timer of its own.
// Most requests are answered within the read that brought them (runNow):
// they never wait, and a timer-wheel entry set and stopped for each of them
// was measurable CPU per request (profiles/notes/2026-11-27-stepsd-cpu-round2.md).
// A request still unanswered when its read's flows have run (one in the
// Limiter's queue, a SLEEP, a key command waiting for its turn) joins its
// shard's deadline list. Deadlines are the arrival time plus the one
// Config.Timeout, so the list, appended in arrival order, is sorted; one
// reactor timer per shard fires at the head's deadline. A request past its
// deadline is answered -Timeout and its flow canceled: the cancel leaves
// the Limiter's queue or section, and stops a SLEEP's timer, as a timeout
// inside the flow did.

// clockStart is the origin of monoNow.
var clockStart = time.Now()

// monoNow is the monotonic clock of request deadlines, in nanoseconds.
func monoNow() int64 { return int64(time.Since(clockStart)) }

// watch puts the requests from first to the connection's tail that are not
// answered yet on the shard's deadline list, due at now + Timeout (now is
// when their read's flows have run: within microseconds of their arrival).
func (sh *shard) watch(first *request) {
	var now int64
	for rq := first; rq != nil; rq = rq.next {
		if rq.done || rq.waiting {
			continue
		}
		if now == 0 {
			now = monoNow()
		}
		rq.deadline = now + int64(sh.s.cfg.Timeout)
		rq.waiting = true
		rq.wprev, rq.wnext = sh.wtail, nil
		if sh.wtail == nil {
			sh.whead = rq
		} else {
			sh.wtail.wnext = rq
		}
		sh.wtail = rq
	}
	if sh.whead != nil && !sh.sweepArmed {
		sh.armSweep(monoNow())
	}
}

// unwatch takes rq off the deadline list, if it is there.
func (sh *shard) unwatch(rq *request) {
	if !rq.waiting {
		return
	}
	if rq.wprev == nil {
		sh.whead = rq.wnext
	} else {
		rq.wprev.wnext = rq.wnext
	}
	if rq.wnext == nil {
		sh.wtail = rq.wprev
	} else {
		rq.wnext.wprev = rq.wprev
	}
	rq.wprev, rq.wnext, rq.waiting = nil, nil, false
}

func (sh *shard) armSweep(now int64) {
	d := time.Duration(sh.whead.deadline - now)
	if d <= 0 {
		d = time.Nanosecond
	}
	sh.sweepArmed = true
	reactor.AfterTo(sh.r, d, sweep, sh, 0)
}

// sweep answers -Timeout every request past its deadline and cancels its
// flow, then waits for the next deadline.
func sweep(sh *shard, _ uint64) {
	// dispatchKeyed below runs key commands outside any step: a panic
	// inside the store's lock (stripe.lock) is the reactor's to recover,
	// and leaves no stripe locked. One defer a sweep, not a request.
	defer sh.s.keys.unlockHeld(&sh.held)
	sh.sweepArmed = false
	now := monoNow()
	for rq := sh.whead; rq != nil && rq.deadline <= now; rq = sh.whead {
		sh.unwatch(rq)
		cn := rq.cn
		rq.fl.root.Cancel() // posted; the request is reused only once its flow has let go of it (newRequest). It is its flow's only unfinished request (runNow)
		rq.answerError(engine.Timeout, "")
		if cn.cursor == rq {
			cn.dispatchKeyed(nil, nil) // it timed out before its turn: the next may go
		}
	}
	if sh.whead != nil {
		sh.armSweep(now)
	}
}
