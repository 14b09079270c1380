package reactor

import (
	"sync"
	"unsafe"
)

// Close stops the reactor. Safe from any goroutine and idempotent.
//
// On a real reactor: submissions after Close report failure (Post returns
// false, Immediate and Deferred return the zero Handle, Execute ends the
// flow with InternalError). Tasks accepted before Close still run, on the
// loop, before it stops: those from other goroutines, and timers already
// due (Immediates made on the loop among them); timers not yet due are
// dropped; flows still running are canceled (their cancel handlers run) and
// end with Canceled, info "reactor closed", so nobody waits forever. Then
// every file descriptor is closed. Called off the loop, Close returns after all that;
// called on the loop, the loop stops when the current callback returns.
//
// On a manual reactor, Close makes later submissions fail, runs the
// shutdown hooks and ends the flows still running (Canceled, info "reactor
// closed", their cancel handlers run): at once when called between
// drives, and when the outermost drive returns when called from inside
// one of its callbacks (a flow cannot be torn down under its own running
// step).
func (r *Reactor) Close() error {
	// Counted as a producer from before closed is set, so that shutdown
	// does not close the eventfd under the kick below.
	r.pushing.Add(1)
	if r.closed.Swap(true) {
		r.pushing.Add(-1)
		if r.os != nil && !r.IsSameThread() {
			<-r.done
		}
		return nil
	}
	if r.os == nil {
		r.pushing.Add(-1)
		r.closeManual()
		return nil
	}
	if r.started.CompareAndSwap(false, true) {
		// Never ran: nobody else will touch it; shut it down here.
		r.pushing.Add(-1)
		r.shutdown()
		r.closeDone()
		return nil
	}
	r.kick()
	r.pushing.Add(-1)
	if !r.IsSameThread() {
		<-r.done
	}
	return nil
}

// closeManual shuts a manual reactor down as its loop: shutdown hooks run
// and the engine ends the flows still running (Canceled, cancel handlers
// run), as a real loop does when it stops. Called from inside a callback of
// the reactor's own drive it leaves that to the outermost drive's end
// (workWord's closing, closeLate): a flow cannot be torn down under its
// own running step, and no later Close would do it (Close is idempotent),
// so without that a waiting flow's Promise never ended.
func (r *Reactor) closeManual() {
	r.enter()
	defer r.leave()
	if r.running != 1 {
		r.work.closing = true
		return
	}
	r.shutdownManual()
}

// closeLate is the shutdown that a Close made inside a drive left to the
// outermost drive (workWord's closing): that drive calls it when it has
// run out of work, holding the loop with no callback of r on its stack. A
// drive that a panic ended leaves it to the next one. Out of line: the
// drives' rare way out.
//
//go:noinline
func (r *Reactor) closeLate() {
	r.work.closing = false
	r.shutdownManual()
}

// shutdownManual is closeManual's shutdown, run by whoever holds the loop
// as its outermost drive. Panics of hooks and of the engine's close go to
// the panic handler (safeCb, safeCall): the drive that runs it still
// gives the word up.
func (r *Reactor) shutdownManual() {
	r.runShutdownHooks()
	if s := r.ext.Load(); s != nil && s.close != nil {
		r.safeCall(s.close)
	}
}

func (r *Reactor) closeDone() {
	select {
	case <-r.done:
	default:
		close(r.done)
	}
}

// Closed reports whether Close was called.
func (r *Reactor) Closed() bool { return r.closed.Load() }

// shutdownHooks are the callbacks AtShutdown registered. They have a lock
// of their own: registering one (netio does, per server and loop) never
// waits for the engine's ExtOrInit, nor the other way round.
type shutdownHooks struct {
	mu   sync.Mutex
	list []hook
}

type hook struct {
	cb  func(arg unsafe.Pointer, aux uint64)
	arg unsafe.Pointer
	aux uint64
}

// xAtShutdown registers cb(arg, aux) to run on the loop when the reactor
// shuts down: after the tasks and due timers accepted before Close, before
// the engine cancels the flows still running. Layers that own descriptors
// (package netio) close them there, so closing a reactor leaks nothing.
// Safe from any goroutine; hooks run in registration order, each once.
func (r *Reactor) xAtShutdown(cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) {
	r.hooks.mu.Lock()
	r.hooks.list = append(r.hooks.list, hook{cb, arg, aux})
	r.hooks.mu.Unlock()
}

// xRemoveAtShutdown forgets the hooks registered with arg: a layer that
// closed its descriptors itself no longer needs them. Safe from any
// goroutine.
func (r *Reactor) xRemoveAtShutdown(arg unsafe.Pointer) {
	r.hooks.mu.Lock()
	hs := r.hooks.list[:0]
	for _, h := range r.hooks.list {
		if h.arg != arg {
			hs = append(hs, h)
		}
	}
	clear(r.hooks.list[len(hs):])
	r.hooks.list = hs
	r.hooks.mu.Unlock()
}

func (r *Reactor) runShutdownHooks() {
	r.hooks.mu.Lock()
	hs := r.hooks.list
	r.hooks.list = nil
	r.hooks.mu.Unlock()
	for _, h := range hs {
		r.safeCb(h.cb, h.arg, h.aux)
	}
}
