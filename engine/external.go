package engine

import (
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/prefetch"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// External finishes a waiting step from anywhere: another goroutine, a
// reactor callback, or another flow's step. It is a small value (no
// allocation). A stale External (its step already finished, timed out or
// was canceled) does nothing and reports false, even after the step's memory
// is reused by another step: it is generation-checked.
//
// A result may arrive before the step's callback has returned; it is applied
// once the callback returns. Finished from a goroutine outside the loops
// while the step's reactor is parked, the call runs the flow on before it
// returns, up to its next wait, its end or one turn's budget, on the
// caller, as the loop (CONTRACT.md, "Where a flow runs"). A true result
// means it was accepted before the step ended; if the step is canceled or
// times out before the loop applies it, the cancel or the timeout wins.
type External struct {
	f   *Steps
	gen uint64
}

// Valid reports whether the step still waits for this External.
func (x External) Valid() bool {
	if x.gen == foreignGen {
		return x.f.foreign().Valid()
	}
	return x.f != nil && x.f.ctl.Load() == x.gen<<xBits|xArmed
}

// foreignGen is the generation of an External of a foreign step: ctl's
// generations are 62 bits wide, so it never names a native step, and
// finish tells the two apart without reading the step, whose memory may
// be another step's by then.
const foreignGen = ^uint64(0)

// Success completes the step with up to four values.
func (x External) Success(args ...Value) bool {
	if len(args) > MaxArgs {
		return x.fail(InternalError, "External.Success: more than 4 values", nil)
	}
	if args == nil {
		args = noValues
	}
	// On the loop, the usual case (a driver flow or a reactor callback
	// completing a parked step): finish's claim and apply's waiting case
	// without the error operands. Anything else goes the general way.
	g := goid.Current() // first: nothing loaded yet is kept across it (IsLoopG)
	if f := x.f; f != nil && x.gen != foreignGen && reactor.X.IsLoopG(f.e.r, g) {
		//lint:ignore SA4016 xNone is 0; or-ing it names the state the word moves to
		if !f.ctl.CompareAndSwap(x.gen<<xBits|xArmed, x.gen<<xBits|xNone) {
			return false
		}
		// apply's waiting case for a success, written out here: its
		// call and the spills around it were a tenth of a completion
		// (the ParallelWaitLoop row). Inside the step's own callback, and for a Lock.Wait
		// step (fRelock: it enters its section instead of completing),
		// apply decides.
		e := f.e
		if e.cur == f || f.st != stWaiting || f.flags&fRelock != 0 {
			e.apply(f, args, "", "", nil)
			return true
		}
		fl := f.fl
		// The step and the flow that parked parkAhead after f (parked),
		// for the completion that many ahead if they come in the
		// order they parked; read before ready overwrites prevReady.
		hf, hfl := f.next, fl.prevReady
		f.st = stRunning
		fl.cur = f
		if len(args) == 1 && !fl.owned && args[0].meta&metaOwned == 0 {
			fl.setArg1(args[0]) // setArgs' work for one plain value, inlined
		} else {
			fl.setArgs(args)
		}
		e.ready(fl, actDone)
		prefetch.Lines(unsafe.Pointer(hf), unsafe.Pointer(hfl), nil, nil)
		return true
	}
	return x.finish(args, "", "", nil)
}

// Pass completes the step successfully, passing on the values it received
// unchanged: a wait step that stands between two steps stays transparent.
func (x External) Pass() bool { return x.finish(nil, "", "", nil) }

// noValues marks a success with no values, as distinct from Pass (nil).
var noValues = make([]Value, 0)

// Error fails the step with code; info becomes State().ErrorInfo.
func (x External) Error(code string, info ...string) bool {
	var inf string
	if len(info) > 0 {
		inf = info[0]
	}
	return x.fail(code, inf, nil)
}

func (x External) fail(code, info string, err error) bool {
	if code == "" {
		code = InternalError
	}
	return x.finish(nil, code, info, err)
}

// finish claims the step and hands the result to the loop. On the loop it is
// applied directly (the flow is queued, never run inside the caller), and
// so it is while the loop is parked (reactor.X.TakeParkedRun), after which
// an ordinary goroutine runs the ready flows itself (the flow runs on, on
// the caller) and a loop wakes it or owes it the turn. From another
// goroutine while the loop runs, the step is CASed to xWriting, the result
// written into the flow's mailbox, the step marked xClaimed and the loop
// told.
func (x External) finish(args []Value, code, info string, err error) bool {
	f := x.f
	if f == nil {
		return false
	}
	if x.gen == foreignGen {
		return finishForeign(f.foreign(), args, code, info)
	}
	e := f.e
	armed := x.gen<<xBits | xArmed
	if e.r.IsSameThread() {
		//lint:ignore SA4016 xNone is 0; or-ing it names the state the word moves to
		if !f.ctl.CompareAndSwap(armed, x.gen<<xBits|xNone) {
			return false
		}
		e.apply(f, args, code, info, err)
		return true
	}
	if t := reactor.X.TakeParkedRun(e.r); reactor.X.Taken(t) {
		// The loop is parked, its engine at rest (no callback runs): the
		// result is applied here, under the loop's word, as on the loop.
		// An ordinary goroutine then runs the ready flows itself, as
		// Execute's caller runs a turn (CONTRACT.md, "Where a flow
		// runs"): the flow goes on to its next wait or its end here,
		// with no thread woken and no line of it handed to the loop's
		// core (a fan-out's completions, each flow's end then read by
		// the loop's core and its root by the releasing goroutine's). A
		// loop (a Mutex handed to a flow of another reactor) wakes the
		// loop, or owes it the turn, as a post would: no task, no
		// mailbox.
		//lint:ignore SA4016 xNone is 0; or-ing it names the state the word moves to
		ok := f.ctl.CompareAndSwap(armed, x.gen<<xBits|xNone)
		if ok {
			e.apply(f, args, code, info, err)
		}
		reactor.X.GiveParkedRun(e.r, t, ok)
		return ok
	}
	if !f.ctl.CompareAndSwap(armed, x.gen<<xBits|xWriting) {
		return false
	}
	fl := f.fl
	fl.xargs.set(args)
	fl.xcode, fl.xinfo, fl.xerr, fl.xpass = code, info, err, args == nil && code == ""
	f.ctl.Store(x.gen<<xBits | xClaimed)
	return reactor.X.Post(e.r, deliverClaimed, unsafe.Pointer(f), x.gen)
}

// finishForeign completes a foreign step through its engine, which decides
// whether the result still applies.
func finishForeign(impl Foreign, args []Value, code, info string) bool {
	if !impl.Valid() {
		return false
	}
	if code != "" {
		impl.Error(code, info)
	} else if args != nil {
		forwardSuccess(impl, args)
	} else {
		a := impl.Args()
		impl.Success(a.v[:a.Len()])
	}
	return true
}

// deliverClaimed applies, on the loop, a result an External wrote from
// another goroutine, unless the step was canceled meanwhile (which CASes
// xClaimed away first).
func deliverClaimed(arg unsafe.Pointer, gen uint64) {
	f := (*Steps)(arg)
	//lint:ignore SA4016 xNone is 0; or-ing it names the state the word moves to
	if !f.ctl.CompareAndSwap(gen<<xBits|xClaimed, gen<<xBits|xNone) {
		return
	}
	fl := f.fl
	code, info, err, pass := fl.xcode, fl.xinfo, fl.xerr, fl.xpass
	fl.xcode, fl.xinfo, fl.xerr, fl.xpass = "", "", nil, false
	if f.st == stWaiting && code == "" && !pass {
		fl.dropArgs(fl.xargs.v[:]) // only now: the flow's values are the step's to replace
		fl.args = fl.xargs
		fl.narrow = false
		fl.xargs = Args{} // moved, not dropped
	}
	fl.clearMailbox()
	f.e.apply(f, nil, code, info, err)
}

// apply finishes f on the loop with a result. Inside f's own callback it acts
// as Success or Error there (the callback goes on; an error unwinds when it
// returns). For a waiting step the flow is queued to advance or unwind.
// args == nil with code == "" keeps fl.args: a Pass, or values the caller
// already put there.
func (e *engine) apply(f *Steps, args []Value, code, info string, err error) {
	fl := f.fl
	switch {
	case e.cur == f:
		if f.flags&fRelock != 0 && code == "" {
			// Let in before its Slow returned, by this very callback:
			// the section would be lost (the step would just complete).
			code, info, err = InternalError, "Lock.Wait: its External passed inside the waiting step's own callback", nil
		}
		if code == "" && f.qlast != nil {
			code, info, err = InternalError, "External: step completed after sub-steps were added", nil
		}
		if code != "" {
			e.setError(f, code, info, err)
			e.raised = raise{kind: raiseError, code: code}
			return
		}
		if args != nil {
			fl.setArgs(args)
		}
		f.flags |= fSucceeded
	case f.st == stWaiting:
		f.st = stRunning
		fl.cur = f
		if code != "" {
			// The error unwinds through the step: its cancel handler runs.
			fl.failCode, fl.failInfo, fl.failErr = code, info, err
			e.ready(fl, actFail)
			return
		}
		// The cancel handler stays until the flow advances past the step
		// (releaseFrame drops it there): a Cancel asked before the flow
		// runs again wins over this result and runs it (RunReady).
		if args != nil {
			fl.setArgs(args)
		}
		if f.flags&fRelock != 0 {
			e.relock(f) // a Lock.Wait: the step runs again as its section
			e.ready(fl, actExec)
			return
		}
		e.ready(fl, actDone)
	}
}
