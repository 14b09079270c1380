package engine

import (
	"context"
	"errors"
	"github.com/asyncsteps/asyncsteps/reactor"
	"unsafe"
)

// SetContext ties the root's flow to ctx, the Go way (root only, while it
// is not executing; nil unties it):
//
//   - when ctx is canceled, the flow is canceled, as by Cancel (cancel
//     handlers run, no error handler; a Promise reports Canceled);
//   - when ctx's deadline passes, the flow fails with Timeout, as if the
//     root had a timeout: waiting steps are canceled innermost first, their
//     error handlers are not called, and State().LastException is ctx.Err();
//   - AwaitFunc's functions get a context derived from ctx, and Context
//     returns it to the flow's steps.
//
// A ctx already done when the flow starts ends it at once, with no step
// run. The root keeps ctx for later runs until SetContext is called again or
// the root is released. Watching a ctx that can be canceled costs one
// context.AfterFunc registration per run (it allocates); a root without a
// context, or with one that is never done (context.Background), costs
// nothing.
func (as *Steps) SetContext(ctx context.Context) {
	checkReleased(as, "SetContext")
	if as == nil || as.kind != kRoot {
		if as != nil && !as.isForeign() {
			misuse(as, "SetContext: not a root")
		}
		return
	}
	rt := rootOf(as)
	if rt.isReleased() {
		return
	}
	if rt.running() {
		misuse(as, "SetContext: the root is executing")
		return
	}
	if ctx != nil || rt.more.Load() != nil {
		rt.extra().ctx = ctx
	}
}

// Context returns the context of as's flow: the one given to SetContext,
// or context.Background(). Any accessor of the flow, or the root.
func (as *Steps) Context() context.Context {
	checkReleased(as, "Context")
	if rt := rootOfFlow(as); rt != nil {
		if x := rt.more.Load(); x != nil && x.ctx != nil {
			return x.ctx
		}
	}
	return context.Background()
}

// watchContext arms the run's context watch when the flow starts, on the
// loop; it reports false when the context is done already and the flow has
// been ended.
func (e *engine) watchContext(rt *root, x *rootExt) bool {
	ctx := x.ctx
	if ctx.Done() == nil {
		return true // never done: nothing to watch
	}
	if ctx.Err() != nil {
		e.endByContext(rt)
		return false
	}
	g := rt.execGen()
	x.stopCtx = context.AfterFunc(ctx, func() {
		reactor.X.Post(rt.e.r, contextDone, unsafe.Pointer(rt), g)
	})
	return true
}

// unwatchContext stops the run's context watch when the flow ends.
func (x *rootExt) unwatchContext() {
	if stop := x.stopCtx; stop != nil {
		x.stopCtx = nil
		stop()
	}
}

// contextDone runs on the loop when the context of run g is done.
func contextDone(arg unsafe.Pointer, g uint64) {
	rt := (*root)(arg)
	if v := rt.run.Load(); v&runActive == 0 || v>>runGenShift != g || !rt.started {
		return // that run is over
	}
	rt.e.endByContext(rt)
}

// endByContext ends rt's running flow because its context is done: Timeout
// for a deadline, Canceled otherwise.
func (e *engine) endByContext(rt *root) {
	err := rt.more.Load().ctx.Err() // only a root with a context ends by it
	at := rt.Steps.fl.cur           // where the flow was: its AsyncStack
	if errors.Is(err, context.DeadlineExceeded) {
		e.setError(at, Timeout, err.Error(), err)
		e.cancelBelow(&rt.Steps)
		e.finishRoot(rt, Timeout)
		return
	}
	e.cancelBelow(&rt.Steps)
	st := rt.stateForWrite()
	st.ErrorInfo = err.Error()
	st.LastException = err
	e.finishRoot(rt, Canceled)
}

// WaitContext is Wait that gives up when ctx is done: it then returns
// ctx.Err() and leaves the flow running (cancel the root, or tie it to ctx
// with SetContext, to stop it too).
func (p *Promise) WaitContext(ctx context.Context) (*Args, error) {
	if p.ended() {
		return p.Wait()
	}
	if p.r != nil && p.r.IsLoopGoroutine() {
		// On the loop, Wait panics with the explanation: nothing else
		// would run the flow.
		return p.Wait()
	}
	if p.assist() {
		return p.Wait()
	}
	select {
	case <-p.Done():
		return p.Wait()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
