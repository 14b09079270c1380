package engine

import (
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// SetTimeout limits the running step, sub-steps included, to d (spec 1.3):
// then it fails with Timeout. It disables implicit success. A later call
// replaces the limit. A d of zero or less is due at once (the step fails
// with Timeout when the loop next fires timers): it is not "no limit",
// which is not calling SetTimeout.
func (as *Steps) SetTimeout(d time.Duration) {
	if !as.execOnly("SetTimeout") {
		if as.isForeign() {
			as.foreign().SetTimeout(d)
		}
		return
	}
	e := as.e
	if as.timed() {
		e.r.Stop(as.timer())
	}
	as.tidx, as.tgen = reactor.X.TimerParts(reactor.X.After(e.r, d, onTimeout, unsafe.Pointer(as), 0))
	as.flags |= fTimeout
	as.arm()
}

// onTimeout fires when a step's SetTimeout expires (spec 1.3): its waiting
// descendants are canceled innermost first, then the step fails with Timeout.
//
// The timer is stopped whenever its step is destroyed, and the wheel's
// handles are generation-checked, so a firing timer always belongs to a live
// step.
func onTimeout(arg unsafe.Pointer, _ uint64) {
	t := (*Steps)(arg)
	switch t.st {
	case stFree, stQueued, stIdle:
		return
	}
	e := t.e
	t.tidx, t.tgen = 0, 0
	e.cancelBelow(t)
	t.releaseClaim()
	fl := t.fl
	fl.cur = t
	fl.failCode, fl.failInfo, fl.failErr = Timeout, "", nil
	e.ready(fl, actFail)
}

// timed reports whether the step has a SetTimeout timer armed.
func (f *Steps) timed() bool { return f.tidx != 0 }

// timer is the step's SetTimeout timer, rebuilt from its parts (see
// Steps.tidx); the zero Timer when none is armed.
func (f *Steps) timer() reactor.Timer { return reactor.X.TimerOf(f.tidx, f.tgen) }
