package reactor

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/arena"
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/ring"
	"github.com/asyncsteps/asyncsteps/timerwheel"
)

// Options configures a Reactor. The zero Options is valid.
//
// The zero Options is the sensible default: an unpinned loop on a locked
// thread, 1ms ticks, the default ring. Every setting is either honoured or
// rejected by New with an error; none is dropped silently.
type Options struct {
	// CPU is the CPU to pin the loop's OS thread to, when Pin is set;
	// -1 = no pinning. Without Pin only 0 (the zero value) and -1 are
	// accepted: a CPU given without Pin is refused rather than ignored, so
	// that the zero Options never pins two reactors to CPU 0.
	CPU int
	// Pin pins the loop's OS thread to CPU (which must be one this process
	// may run on); off by default.
	Pin      bool
	Tick     time.Duration // timer wheel resolution; 0 = 1ms; negative: refused
	RingSize int           // cross-thread submission ring capacity, rounded up to a power of two; 0 = default; negative: refused
	// Spin is how long a real loop that ran out of work keeps looking for
	// work posted from other threads before it sleeps (0: it sleeps at
	// once). A reply expected from another reactor within that time then
	// costs neither side a wake-up, for a core that spins meanwhile: worth
	// it with spare cores, a loss when cores are shared (profiles/README.md).
	Spin time.Duration
	// Unlocked runs an unpinned loop (CPU -1) without locking its
	// goroutine to an OS thread: Run then blocks in epoll_wait like any
	// goroutine in a syscall, and the runtime may resume the loop on
	// whichever thread is awake. One request's round trip through stepsd
	// over loopback on 2 shared CPUs: p50 64 µs locked, 34 µs unlocked
	// (profiles/README.md). A pinned loop needs its thread: Unlocked with
	// Pin is refused.
	Unlocked bool
}

// check reports the first setting New cannot honour.
func (o Options) check() error {
	switch {
	case o.CPU < -1:
		return fmt.Errorf("reactor: Options.CPU %d: want a CPU number, or -1 for no pinning", o.CPU)
	case o.Pin && o.CPU < 0:
		return errors.New("reactor: Options.Pin with CPU -1: give the CPU to pin to")
	case !o.Pin && o.CPU > 0:
		return fmt.Errorf("reactor: Options.CPU %d without Pin: set Pin to pin the loop, or CPU -1", o.CPU)
	case o.Pin && o.Unlocked:
		return errors.New("reactor: Options.Unlocked with Pin: a pinned loop keeps its thread locked")
	case o.Tick < 0:
		return fmt.Errorf("reactor: Options.Tick %v is negative", o.Tick)
	case o.RingSize < 0:
		return fmt.Errorf("reactor: Options.RingSize %d is negative", o.RingSize)
	case o.Spin < 0:
		return fmt.Errorf("reactor: Options.Spin %v is negative", o.Spin)
	}
	if o.Pin {
		return checkCPU(o.CPU)
	}
	return nil
}

// DefaultRingSize is the capacity of the submission ring when Options.RingSize is 0.
const DefaultRingSize = 1 << 14

// ErrClosed describes work refused because the reactor is closed; Run
// itself returns nil after Close.
var ErrClosed = errors.New("reactor: closed")

// ErrManual is returned by Run on a reactor made with NewManual.
var ErrManual = errors.New("reactor: Run on a manual reactor; drive it with Iterate, RunUntilIdle or Advance")

// task is one unit of work sent through the MPSC ring.
type task struct {
	fn    func()
	cb    func(arg unsafe.Pointer, aux uint64)
	arg   unsafe.Pointer
	aux   uint64
	delay time.Duration // taskDeferred: the deadline since epoch; taskCancelTimer: the handle's index
	seq   uint64        // taskCancelTimer: the timer's sequence number
	kind  uint8
}

// timerTask packs a wheel handle into a task's word fields, keeping the
// ring's slots small: it is only needed by the rare off-loop cancel of a
// loop-side timer.
func timerTask(h timerwheel.Handle, seq uint64) task {
	idx, gen := h.Parts()
	return task{aux: gen, delay: time.Duration(idx), seq: seq, kind: taskCancelTimer}
}

const (
	taskImmediate uint8 = iota
	taskDeferred
	taskCall
	taskCancelTimer // cancel the loop-side timer th
)

// Runner is the engine's hook into the loop: it runs whatever the engine has
// ready and reports whether more is ready now.
type Runner func() bool

// Reactor is an event loop. See the package documentation for its contract.
type Reactor struct {
	// Loop-owned state: touched only on the loop goroutine.
	wheel   *timerwheel.Wheel
	arena   *arena.Arena
	running int // nesting depth of Iterate/RunUntilIdle/Advance on a manual reactor

	// Set once before the loop starts, read-only afterwards.
	manual bool
	tick   time.Duration
	epoch  time.Time
	extMu  sync.Mutex
	ext    atomic.Pointer[extSlot]

	// virtual is the manual clock, as time since epoch. Written only by the
	// loop; atomic because Now may be called from any goroutine.
	virtual atomic.Int64

	// loopG is goid.Current() of the loop while it runs, 0 otherwise. On a
	// manual reactor it is also the drive lock: a goroutine becomes the loop
	// by CASing it from 0, so another goroutine can take the loop's role
	// between drives (IsValid, Cancel) instead of waiting for a drive that
	// may never come.
	loopG atomic.Uintptr
	// driver is goid.Current() of the goroutine that last drove a manual
	// reactor (see IsLoopGoroutine).
	driver atomic.Uintptr

	os       *osLoop     // real reactors only: poller, eventfd, timerfd
	started  atomic.Bool // Run was called (or Close made it impossible)
	sleeping atomic.Bool // the loop may be blocked in the poller: wake it
	pushing  atomic.Int32
	done     chan struct{} // closed when a real loop has shut down

	closed atomic.Bool
	inbox  *ring.MPSC[task]

	// overflow takes what a full ring cannot on a manual reactor, whose
	// loop runs only when its owner drives it: waiting there would
	// deadlock a test that posts more than the ring holds between drives.
	overflowMu     sync.Mutex
	overflow       []task
	overflowActive atomic.Bool   // a producer that sees it set appends to overflow, keeping its own order
	overflowSeq    uint64        // overflow positions handed out; under overflowMu
	overflowDone   atomic.Uint64 // overflow positions below it were taken by the loop
	batch          []task        // loop-owned scratch for draining the overflow
	wake           func()        // real reactors: wakes a sleeping loop; nil for manual

	// remote bookkeeping: rare paths (cancel of a cross-goroutine task, and
	// cross-goroutine Deferred), kept off the hot path behind one mutex.
	remoteMu        sync.Mutex
	remoteCanceled  map[uint64]struct{}          // positions canceled before the loop took them
	remoteTimers    map[uint64]timerwheel.Handle // positions of remote Deferred tasks now in the wheel
	remoteFns       map[uint64]func()            // their callbacks, by the same position
	deferredSettled uint64                       // remote Deferred positions below it are in the wheel, fired or canceled
	overflowSettled uint64                       // the same for overflow positions (without overflowBit)
	remotePending   atomic.Int32                 // len(remoteCanceled), read without the lock
	timerCanceled   map[uint64]struct{}          // seqs of loop-side timers canceled off the loop, not yet removed
	timerPending    atomic.Int32                 // len(timerCanceled), read without the lock
	timerSeq        uint64                       // loop-owned: sequence of user timers made on the loop

	hooks []hook // AtShutdown's; under extMu

	// spin is how long a real loop that ran out of work keeps looking for
	// posted work before it sleeps (Options.Spin).
	spin time.Duration

	// PanicHandler receives the value of a panic recovered from a callback.
	// Set it before the loop starts. The default prints to standard error.
	PanicHandler func(v any)
}

func newReactor(opts Options, manual bool) *Reactor {
	tick := opts.Tick
	if tick <= 0 {
		tick = time.Millisecond
	}
	size := opts.RingSize
	if size <= 0 {
		size = DefaultRingSize
	}
	r := &Reactor{
		wheel:  timerwheel.New(0),
		arena:  arena.New(),
		manual: manual,
		tick:   tick,
		epoch:  time.Now(),
		inbox:  ring.NewMPSC[task](size),
		done:   make(chan struct{}),
		spin:   max(opts.Spin, 0),
	}
	r.PanicHandler = func(v any) { fmt.Fprintf(os.Stderr, "reactor: recovered panic in callback: %v\n", v) }
	return r
}

// NewManual returns a deterministic reactor for tests: no thread, a virtual
// clock that starts at the current wall time and moves only in Advance.
func NewManual() *Reactor { return newReactor(Options{CPU: -1}, true) }

// Arena returns the reactor's pooled memory. Loop only.
func (r *Reactor) Arena() *arena.Arena { return r.arena }

// Ext is what the layer above (the engine) attaches to a reactor.
type Ext struct {
	Value any         // the layer's per-reactor state
	Run   Runner      // called by the loop on every iteration
	Ready func() bool // reports, without running anything, whether Run has work
	Close func()      // called on the loop when it shuts down, after accepted tasks ran
}

type extSlot struct {
	v     any
	run   Runner
	ready func() bool
	close func()
}

// Ext returns the value attached by ExtOrInit, or nil. Safe from any goroutine.
func (r *Reactor) Ext() any {
	if s := r.ext.Load(); s != nil {
		return s.v
	}
	return nil
}

// ExtOrInit returns the value attached to the reactor for the layer above
// (the engine keeps its per-reactor pools there), attaching init()'s Ext the
// first time. Safe from any goroutine; init runs at most once per reactor.
func (r *Reactor) ExtOrInit(init func() Ext) any {
	if s := r.ext.Load(); s != nil {
		return s.v
	}
	r.extMu.Lock()
	defer r.extMu.Unlock()
	if s := r.ext.Load(); s != nil {
		return s.v
	}
	x := init()
	r.ext.Store(&extSlot{v: x.Value, run: x.Run, ready: x.Ready, close: x.Close})
	return x.Value
}

// Tick returns the timer resolution.
func (r *Reactor) Tick() time.Duration { return r.tick }

// IsSameThread reports whether the caller is the loop.
func (r *Reactor) IsSameThread() bool { return r.loopG.Load() == goid.Current() }

// IsLoopGoroutine reports whether the caller is the goroutine the loop
// depends on: the loop itself (IsSameThread), or, for a manual reactor, the
// goroutine that last drove it (Iterate, RunUntilIdle, Advance). Blocking
// that goroutine until the loop makes progress deadlocks; the engine's
// Promise.Wait asks this to panic instead.
func (r *Reactor) IsLoopGoroutine() bool {
	me := goid.Current()
	return r.loopG.Load() == me || r.manual && r.driver.Load() == me
}

// Now returns the loop's clock: virtual under NewManual, the wall clock otherwise.
func (r *Reactor) Now() time.Time { return r.epoch.Add(r.elapsed()) }

func (r *Reactor) elapsed() time.Duration {
	if r.manual {
		return time.Duration(r.virtual.Load())
	}
	return time.Since(r.epoch)
}

// deadlineTick is the first tick whose boundary is at or after now+d.
func (r *Reactor) deadlineTick(d time.Duration) uint64 {
	if d < 0 {
		d = 0
	}
	t := r.elapsed() + d
	return uint64((t + r.tick - 1) / r.tick)
}

// currentTick is the last tick boundary at or before now.
func (r *Reactor) currentTick() uint64 { return uint64(r.elapsed() / r.tick) }

// Immediate schedules fn to run on the loop as soon as possible. Safe from
// any goroutine; callbacks run in the order posted. Returns the zero Handle
// after Close.
//
// On the loop an Immediate is a timer due at the current tick, behind the
// timers already due: a callback that keeps rescheduling itself cannot
// starve timers, posted tasks or flows.
func (r *Reactor) Immediate(fn func()) Handle {
	if r.IsSameThread() {
		if r.closed.Load() {
			return Handle{}
		}
		r.timerSeq++
		return Handle{t: r.wheel.Add(r.currentTick(), timerwheel.Entry{Fn: fn, Aux: r.timerSeq}), pos: r.timerSeq, kind: handleTimer}
	}
	pos, ok := r.push(task{fn: fn, kind: taskImmediate})
	if !ok {
		return Handle{}
	}
	return Handle{pos: pos, kind: handleRemote}
}

// Deferred schedules fn to run on the loop after d. Safe from any goroutine.
// Returns the zero Handle after Close.
func (r *Reactor) Deferred(d time.Duration, fn func()) Handle {
	if r.IsSameThread() {
		if r.closed.Load() {
			return Handle{}
		}
		r.timerSeq++
		return Handle{t: r.wheel.Add(r.deadlineTick(d), timerwheel.Entry{Fn: fn, Aux: r.timerSeq}), pos: r.timerSeq, kind: handleTimer}
	}
	// The deadline counts from this call, not from when the loop takes
	// the task: delay carries it as time since epoch.
	pos, ok := r.push(task{fn: fn, delay: r.elapsed() + max(d, 0), kind: taskDeferred})
	if !ok {
		return Handle{}
	}
	return Handle{pos: pos, kind: handleRemoteDeferred}
}

// Cancel cancels a task scheduled with Immediate or Deferred. It is not an
// error if the task already ran, was canceled, or h is the zero Handle.
// Safe from any goroutine.
func (r *Reactor) Cancel(h Handle) {
	switch h.kind {
	case handleTimer:
		if r.IsSameThread() {
			r.wheel.Cancel(h.t)
			return
		}
		if r.manual {
			r.enter()
			r.wheel.Cancel(h.t)
			r.leave()
			return
		}
		if me := goid.Current(); r.loopG.CompareAndSwap(0, me) {
			r.wheel.Cancel(h.t)
			r.loopG.Store(0)
			return
		}
		// The wheel belongs to the loop. Mark the timer canceled where the
		// loop looks before it runs a user timer, so that a task whose
		// Cancel returned never runs, without waiting for a loop that may
		// be busy; the loop then removes it from the wheel.
		r.remoteMu.Lock()
		if r.timerCanceled == nil {
			r.timerCanceled = make(map[uint64]struct{})
		}
		r.timerCanceled[h.pos] = struct{}{}
		r.timerPending.Add(1)
		r.remoteMu.Unlock()
		r.push(timerTask(h.t, h.pos))
	case handleRemote:
		r.remoteMu.Lock()
		if r.pending(h.pos) {
			r.markRemoteCanceled(h.pos)
		}
		r.remoteMu.Unlock()
	case handleRemoteDeferred:
		r.remoteMu.Lock()
		if th, ok := r.remoteTimers[h.pos]; ok {
			delete(r.remoteTimers, h.pos)
			delete(r.remoteFns, h.pos)
			if r.IsSameThread() {
				r.wheel.Cancel(th)
			}
			// Off the loop, the wheel entry stays until it falls due; its
			// callback finds no record in remoteTimers and does nothing.
		} else if !r.settled(h.pos) {
			// Not yet in the wheel: still in the ring, or taken by the
			// loop and about to be added, which checks this mark.
			r.markRemoteCanceled(h.pos)
		}
		r.remoteMu.Unlock()
	}
}

// IsValid reports whether h still refers to a task that has not run and was
// not canceled. Safe from any goroutine; for a timer scheduled on the loop,
// an answer off the loop is a snapshot that may already be stale.
func (r *Reactor) IsValid(h Handle) bool {
	switch h.kind {
	case handleTimer:
		if r.IsSameThread() {
			return r.wheel.Valid(h.t)
		}
		if r.timerPending.Load() != 0 {
			r.remoteMu.Lock()
			_, canceled := r.timerCanceled[h.pos]
			r.remoteMu.Unlock()
			if canceled {
				return false
			}
		}
		return r.offLoopTimerValid(h.t)
	case handleRemote:
		r.remoteMu.Lock()
		defer r.remoteMu.Unlock()
		if r.pending(h.pos) {
			_, canceled := r.remoteCanceled[h.pos]
			return !canceled && !r.closed.Load()
		}
		return false
	case handleRemoteDeferred:
		r.remoteMu.Lock()
		defer r.remoteMu.Unlock()
		if _, ok := r.remoteTimers[h.pos]; ok {
			return true
		}
		if !r.settled(h.pos) {
			_, canceled := r.remoteCanceled[h.pos]
			return !canceled && !r.closed.Load()
		}
		return false
	}
	return false
}

// offLoopTimerValid answers IsValid for a loop-side timer asked from another
// goroutine. The wheel is not safe to read there: a manual reactor is taken
// between drives; a running loop is asked through the ring and answers
// through a channel. It is the slow path by design.
func (r *Reactor) offLoopTimerValid(h timerwheel.Handle) bool {
	if r.manual {
		r.enter()
		defer r.leave()
		return r.wheel.Valid(h)
	}
	if me := goid.Current(); r.loopG.CompareAndSwap(0, me) {
		// No loop is running (not started, or stopped): the wheel is idle.
		defer r.loopG.Store(0)
		return r.wheel.Valid(h)
	}
	ch := make(chan bool, 1)
	if _, ok := r.push(task{fn: func() { ch <- r.wheel.Valid(h) }, kind: taskImmediate}); !ok {
		return false
	}
	return <-ch
}

// Timer is a compact handle for a timer made with After; the zero Timer is
// not a timer. Generation-checked like Handle.
type Timer struct{ h timerwheel.Handle }

// IsZero reports whether t is the zero Timer.
func (t Timer) IsZero() bool { return t.h.IsZero() }

// After schedules cb(arg, aux) on the loop after d, without allocating. Loop only.
// It is the engine's timer: arg is typically a frame and aux its generation.
func (r *Reactor) After(d time.Duration, cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) Timer {
	return Timer{r.wheel.Add(r.deadlineTick(d), timerwheel.Entry{Cb: cb, Arg: arg, Aux: aux})}
}

// Stop cancels a timer made with After. A stale or zero Timer is ignored. Loop only.
func (r *Reactor) Stop(t Timer) {
	if !t.h.IsZero() {
		r.wheel.Cancel(t.h)
	}
}

// Post runs cb(arg, aux) on the loop. Safe from any goroutine, never
// allocates. Called on the loop, it runs after the current callback returns.
// It reports false, doing nothing, after Close.
func (r *Reactor) Post(cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) bool {
	if r.IsSameThread() {
		if r.closed.Load() {
			return false
		}
		r.wheel.Add(r.currentTick(), timerwheel.Entry{Cb: cb, Arg: arg, Aux: aux})
		return true
	}
	_, ok := r.push(task{cb: cb, arg: arg, aux: aux, kind: taskCall})
	return ok
}

// push hands t to the loop through the ring. When the ring is full a real
// reactor's caller waits for the loop (backpressure), unless the caller is
// itself a reactor's loop; then, as on a manual reactor, the task goes to
// the overflow list.
func (r *Reactor) push(t task) (uint64, bool) {
	// pushing lets shutdown wait for a producer that saw the reactor open,
	// so a task accepted before Close is never left in the ring.
	r.pushing.Add(1)
	defer r.pushing.Add(-1)
	for spins := 0; ; spins++ {
		if r.closed.Load() {
			return 0, false
		}
		if r.overflowActive.Load() {
			// Behind tasks already in the overflow list: each producer's
			// order holds only if nobody jumps back into the ring first.
			pos := r.pushOverflow(t)
			if r.wake != nil {
				r.wake()
			}
			return pos, true
		}
		if pos, ok := r.inbox.TryPushPos(t); ok {
			if r.wake != nil {
				r.wake()
			}
			return pos, true
		}
		if r.manual || isLoop(goid.Current()) {
			// A manual reactor runs only when driven; and a loop waiting
			// for another loop's ring could deadlock with it. Both queue.
			pos := r.pushOverflow(t)
			if r.wake != nil {
				r.wake()
			}
			return pos, true
		}
		// Full: the loop is behind. Yield first; if that is not enough the
		// loop is busy for longer, so sleep with a capped backoff instead of
		// burning the core the loop may need.
		if r.wake != nil {
			r.wake()
		}
		if spins < 16 {
			runtime.Gosched()
		} else {
			d := time.Microsecond << min(spins-16, 10)
			time.Sleep(d)
		}
	}
}

// loops holds the goroutine identities of running real loops, so that a
// loop posting to another reactor's full ring queues instead of waiting
// (two loops waiting on each other would deadlock). Read only when a ring
// is full.
var loops sync.Map // goid -> struct{}

func isLoop(g uintptr) bool {
	_, ok := loops.Load(g)
	return ok
}

// overflowBit marks the position of a task in the overflow list, a sequence
// of its own, so that a Handle never confuses it with a ring position.
const overflowBit = 1 << 63

func (r *Reactor) pushOverflow(t task) uint64 {
	r.overflowMu.Lock()
	pos := overflowBit | r.overflowSeq
	r.overflowSeq++
	r.overflow = append(r.overflow, t)
	r.overflowActive.Store(true)
	r.overflowMu.Unlock()
	return pos
}

// pending reports whether the task at pos has not been taken by the loop yet.
func (r *Reactor) pending(pos uint64) bool {
	if pos&overflowBit != 0 {
		return pos&^overflowBit >= r.overflowDone.Load()
	}
	return pos >= r.inbox.Consumed()
}

// drainOverflow runs the overflowed tasks. The ring is emptied first, under
// the lock: every task a producer put in the ring before it overflowed is
// in the ring by now, and while the flag is set no producer adds to the ring
// behind the tasks taken here, so each producer's order holds.
func (r *Reactor) drainOverflow() {
	r.overflowMu.Lock()
	b := r.batch[:0]
	for {
		t, ok := r.inbox.TryPop()
		if !ok {
			break
		}
		b = append(b, t)
	}
	fromRing := len(b)
	b = append(b, r.overflow...)
	clear(r.overflow)
	r.overflow = r.overflow[:0]
	first := r.overflowDone.Load()
	r.overflowDone.Store(r.overflowSeq)
	r.overflowActive.Store(false)
	r.overflowMu.Unlock()
	ringPos := r.inbox.Consumed() - uint64(fromRing)
	for i := range b {
		pos := ringPos + uint64(i)
		if i >= fromRing {
			pos = overflowBit | (first + uint64(i-fromRing))
		}
		r.runTask(b[i], pos)
		b[i] = task{}
	}
	r.batch = b[:0]
}

// enter marks the caller as the loop for the duration of a manual drive.
// enter makes the caller the loop of a manual reactor, waiting for another
// goroutine's drive to end. Nested calls from the loop just count.
func (r *Reactor) enter() {
	me := goid.Current()
	if r.loopG.Load() == me {
		r.running++ // a callback driving its own manual reactor
		return
	}
	for spins := 0; !r.loopG.CompareAndSwap(0, me); spins++ {
		if spins < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
	r.driver.Store(me)
	r.running = 1
}

func (r *Reactor) leave() {
	r.running--
	if r.running == 0 {
		r.loopG.Store(0)
	}
}

// maxInboxBatch bounds how many cross-goroutine tasks one iteration takes,
// so a flood from other goroutines cannot starve timers and flows.
const maxInboxBatch = 1024

// maxTimersPerIteration bounds the timers (loop-side Immediates included)
// one iteration fires.
const maxTimersPerIteration = 1024

// iterate runs what is ready now, once: posted tasks, due timers, then the
// engine's ready flows. It reports whether work is still ready.
func (r *Reactor) iterate() bool {
	for i := 0; i < maxInboxBatch; i++ {
		t, ok := r.inbox.TryPop()
		if !ok {
			break
		}
		r.runTask(t, r.inbox.Consumed()-1)
	}
	if r.overflowActive.Load() {
		r.drainOverflow()
	}
	now := r.currentTick()
	r.fireDue(now)
	more := false
	if s := r.ext.Load(); s != nil && s.run != nil {
		more = s.run()
	}
	if more || r.inbox.Len() > 0 || r.overflowActive.Load() {
		return true
	}
	if next, ok := r.wheel.NextDeadline(); ok && next <= now {
		return true
	}
	return false
}

// fireDue runs the timers due at tick now, at most maxTimersPerIteration:
// a callback that schedules itself again at once (an Immediate from the
// loop is a timer due now) must not keep the loop from posted tasks and
// flows; the rest fires on the next iteration.
func (r *Reactor) fireDue(now uint64) {
	for i := 0; i < maxTimersPerIteration; i++ {
		e, ok := r.wheel.Poll(now)
		if !ok {
			return
		}
		r.runEntry(e)
	}
}

func (r *Reactor) runTask(t task, pos uint64) {
	if t.kind == taskDeferred {
		r.addRemoteTimer(t, pos)
		return
	}
	if r.remotePending.Load() != 0 && r.takeCanceled(pos) {
		return
	}
	switch t.kind {
	case taskImmediate:
		r.safeCall(t.fn)
	case taskCall:
		r.safeCb(t.cb, t.arg, t.aux)
	case taskCancelTimer:
		r.wheel.Cancel(timerwheel.HandleOf(uint32(t.delay), t.aux))
		r.takeTimerCanceled(t.seq)
	}
}

// addRemoteTimer puts a Deferred from another goroutine in the wheel. Under
// remoteMu, so that a Cancel racing it either is seen here or finds the
// timer recorded; deferredSettled tells the two cases apart later.
func (r *Reactor) addRemoteTimer(t task, pos uint64) {
	r.remoteMu.Lock()
	defer r.remoteMu.Unlock()
	if pos&overflowBit != 0 {
		r.overflowSettled = pos&^overflowBit + 1
	} else {
		r.deferredSettled = pos + 1
	}
	if _, ok := r.remoteCanceled[pos]; ok {
		delete(r.remoteCanceled, pos)
		r.remotePending.Add(-1)
		return
	}
	at := uint64((t.delay + r.tick - 1) / r.tick) // t.delay is the deadline since epoch
	h := r.wheel.Add(at, timerwheel.Entry{Cb: fireRemoteTimer, Arg: unsafe.Pointer(r), Aux: pos})
	if r.remoteTimers == nil {
		r.remoteTimers = make(map[uint64]timerwheel.Handle)
		r.remoteFns = make(map[uint64]func())
	}
	r.remoteTimers[pos] = h
	r.remoteFns[pos] = t.fn
}

// settled reports whether the remote Deferred at pos was put in the wheel
// (and so has fired or been canceled if it is no longer there). Ring and
// overflow positions are separate sequences. Under remoteMu.
func (r *Reactor) settled(pos uint64) bool {
	if pos&overflowBit != 0 {
		return pos&^overflowBit < r.overflowSettled
	}
	return pos < r.deferredSettled
}

// markRemoteCanceled records a cancel of the task at pos. Under remoteMu.
func (r *Reactor) markRemoteCanceled(pos uint64) {
	if r.remoteCanceled == nil {
		r.remoteCanceled = make(map[uint64]struct{})
	}
	if _, dup := r.remoteCanceled[pos]; !dup {
		r.remoteCanceled[pos] = struct{}{}
		r.remotePending.Add(1)
	}
}

func (r *Reactor) takeCanceled(pos uint64) bool {
	return r.takeMark(r.remoteCanceled, &r.remotePending, pos)
}

// takeMark removes key from set (a cancel mark, counted by n), reporting
// whether it was there.
func (r *Reactor) takeMark(set map[uint64]struct{}, n *atomic.Int32, key uint64) bool {
	r.remoteMu.Lock()
	defer r.remoteMu.Unlock()
	if _, ok := set[key]; ok {
		delete(set, key)
		n.Add(-1)
		return true
	}
	return false
}

func fireRemoteTimer(arg unsafe.Pointer, pos uint64) {
	r := (*Reactor)(arg)
	r.remoteMu.Lock()
	_, live := r.remoteTimers[pos]
	fn := r.remoteFns[pos]
	delete(r.remoteTimers, pos)
	delete(r.remoteFns, pos)
	r.remoteMu.Unlock()
	if live {
		r.safeCall(fn)
	}
}

func (r *Reactor) runEntry(e timerwheel.Entry) {
	if e.Cb != nil {
		r.safeCb(e.Cb, e.Arg, e.Aux)
		return
	}
	if r.timerPending.Load() != 0 && r.takeTimerCanceled(e.Aux) {
		return // canceled off the loop before it fired
	}
	r.safeCall(e.Fn)
}

// takeTimerCanceled forgets an off-loop cancel of the timer with seq,
// reporting whether there was one.
func (r *Reactor) takeTimerCanceled(seq uint64) bool {
	return r.takeMark(r.timerCanceled, &r.timerPending, seq)
}

// safeCall and safeCb contain a panic to the one callback that raised it. The
// engine recovers its own panics, so this defer is the last line for user
// code given to Immediate or Deferred; it is open-coded and costs ~1ns.
func (r *Reactor) safeCall(fn func()) {
	defer r.recoverPanic()
	fn()
}

func (r *Reactor) safeCb(cb func(unsafe.Pointer, uint64), arg unsafe.Pointer, aux uint64) {
	defer r.recoverPanic()
	cb(arg, aux)
}

func (r *Reactor) recoverPanic() {
	if v := recover(); v != nil {
		if h := r.PanicHandler; h != nil {
			h(v)
		}
	}
}

// Iterate runs the work that is ready now, once, and reports whether work is
// still ready. Timers not yet due are not ready work. NewManual only.
func (r *Reactor) Iterate() bool {
	r.enter()
	defer r.leave()
	return r.iterate()
}

// RunUntilIdle iterates until nothing is ready. NewManual only.
func (r *Reactor) RunUntilIdle() {
	r.enter()
	defer r.leave()
	for r.iterate() {
	}
}

// Advance moves the virtual clock forward by d, tick by tick, firing due
// timers in deadline order (including timers scheduled during the advance
// that fall due within it) and running the work they make ready. NewManual only.
func (r *Reactor) Advance(d time.Duration) {
	r.enter()
	defer r.leave()
	for r.iterate() {
	}
	target := time.Duration(r.virtual.Load()) + d
	for {
		next, ok := r.wheel.NextDeadline()
		if !ok {
			break
		}
		at := time.Duration(next) * r.tick
		if at > target {
			break
		}
		if at > time.Duration(r.virtual.Load()) {
			r.virtual.Store(int64(at))
		}
		for r.iterate() {
		}
	}
	r.virtual.Store(int64(target))
	for r.iterate() {
	}
}

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
// On a manual reactor, Close only makes later submissions fail.
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
// the reactor's own drive it leaves that to the caller's drive: a flow
// cannot be torn down under its own running step.
func (r *Reactor) closeManual() {
	r.enter()
	defer r.leave()
	if r.running != 1 {
		return
	}
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

type hook struct {
	cb  func(arg unsafe.Pointer, aux uint64)
	arg unsafe.Pointer
	aux uint64
}

// AtShutdown registers cb(arg, aux) to run on the loop when the reactor
// shuts down: after the tasks and due timers accepted before Close, before
// the engine cancels the flows still running. Layers that own descriptors
// (package netio) close them there, so closing a reactor leaks nothing.
// Safe from any goroutine; hooks run in registration order, each once.
func (r *Reactor) AtShutdown(cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) {
	r.extMu.Lock()
	r.hooks = append(r.hooks, hook{cb, arg, aux})
	r.extMu.Unlock()
}

// RemoveAtShutdown forgets the hooks registered with arg: a layer that
// closed its descriptors itself no longer needs them. Safe from any
// goroutine.
func (r *Reactor) RemoveAtShutdown(arg unsafe.Pointer) {
	r.extMu.Lock()
	hs := r.hooks[:0]
	for _, h := range r.hooks {
		if h.arg != arg {
			hs = append(hs, h)
		}
	}
	clear(r.hooks[len(hs):])
	r.hooks = hs
	r.extMu.Unlock()
}

func (r *Reactor) runShutdownHooks() {
	r.extMu.Lock()
	hs := r.hooks
	r.hooks = nil
	r.extMu.Unlock()
	for _, h := range hs {
		r.safeCb(h.cb, h.arg, h.aux)
	}
}
