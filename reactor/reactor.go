package reactor

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/ring"
	"github.com/asyncsteps/asyncsteps/timerwheel"
)

// ErrClosed describes work refused because the reactor is closed; Run
// itself returns nil after Close.
var ErrClosed = errors.New("reactor: closed")

// ErrManual is returned by Run on a reactor made with NewManual.
var ErrManual = errors.New("reactor: Run on a manual reactor; drive it with Iterate, RunUntilIdle or Advance")

// runner is the engine's hook into the loop: it runs whatever the engine has
// ready and reports whether more is ready now.
type runner func() bool

// Reactor is an event loop. See the package documentation for its contract.
type Reactor struct {
	// Loop-owned state: touched only on the loop goroutine.
	wheel   *timerwheel.Wheel
	running int          // nesting depth of Iterate/RunUntilIdle/Advance on a manual reactor
	m       loopCounters // Metrics (metrics.go)

	// Set once before the loop starts, read-only afterwards.
	manual bool
	tick   time.Duration
	epoch  time.Time
	extMu  sync.Mutex
	ext    atomic.Pointer[extSlot]
	// extMay is ext's mayRun flag (ext.go), set with ext: the full
	// pass's one look at the attachments, two loads where the slot's run
	// and pending fields took four; the idle shortcut reads the
	// engine's flag in work instead (workWord). Read on the loop only.
	extMay atomic.Pointer[bool]

	// work says which loop-owned sources may hold work (workWord): the
	// idle iteration's one look at them. Loop-owned.
	work workWord
	// loopGen changes at the start and at the end of every outermost
	// iteration (iterate: a real loop's turns, a manual reactor's
	// Iterate and Advance, an assist's turn), and before the word is
	// given up at the end of every hold that may have run a callback (a
	// manual reactor's outermost drive, leave and leaveOutermost; a turn
	// or task run in a parked loop's place; shutdown): a Loop records it,
	// and is held only while it is unchanged (loopctx.go), so that a Loop
	// kept past the stretch that made it is not held while a real loop,
	// which keeps its word between iterations, spins or runs the next,
	// nor in a later hold of the word by the same goroutine.
	// Loop-owned; in the four bytes after work, on the loop word's line.
	loopGen uint32

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
	// pushing counts the goroutines writing the eventfd (wakeLoop, Close),
	// and fdsClosing stops new ones, so shutdown never closes it under a
	// write.
	pushing    atomic.Int32
	fdsClosing atomic.Bool
	done       chan struct{} // closed when a real loop has shut down

	closed atomic.Bool

	// overflow takes what a full ring cannot on a manual reactor, whose
	// loop runs only when its owner drives it: waiting there would
	// deadlock a test that posts more than the ring holds between drives.
	overflow overflowList
	wake     func() // real reactors: wakes a sleeping loop; nil for manual

	remote   remoteBook // handles given to other goroutines: their cancels and timers
	timerSeq uint64     // loop-owned: sequence of user timers made on the loop

	local localQueue // loop-owned: Immediate and Post made on the loop (local.go)

	// owed is loop-owned: the parked reactors this loop posted to and must
	// now run or wake (handoff_linux.go).
	owed []owedTurn
	// owedPaid is loop-owned: how many of owed payOwed has taken so far
	// (owe looks for a duplicate only among the rest).
	owedPaid int

	hooks shutdownHooks // AtShutdown's, with their own lock

	// spin is how long a real loop that ran out of work keeps looking for
	// posted work before it sleeps (Options.Spin): 0 adaptive, < 0 never.
	spin time.Duration

	// panicHandler receives a panic recovered from a callback
	// (Options.PanicHandler or SetPanicHandler); never nil.
	panicHandler func(v any)

	// inbox is the ring other goroutines post through, kept in place so
	// that the idle look reads its two positions without a pointer to
	// follow (the EmptyIteration row). Last, so that the loop's other
	// fields keep the offsets and cache lines they had beside a pointer;
	// the ring's own padding keeps its producers' line apart from them.
	inbox ring.MPSC[task]
}

// printPanic is the panic handler of a reactor given none.
func printPanic(v any) { fmt.Fprintf(os.Stderr, "reactor: recovered panic in callback: %v\n", v) }

// SetPanicHandler replaces the function that receives the value of a panic
// recovered from a callback: for a NewManual reactor, which takes no
// Options (a real one takes Options.PanicHandler). Call it before the
// reactor runs or is driven, or from its loop. nil restores the default,
// which prints to standard error.
func (r *Reactor) SetPanicHandler(h func(v any)) {
	if h == nil {
		h = printPanic
	}
	r.panicHandler = h
}

// ReportPanic hands v, a panic recovered from code run on the loop on the
// reactor's behalf (netio's connection handlers, for instance), to the
// reactor's panic handler. Loop only.
func (r *Reactor) ReportPanic(v any) { r.panicHandler(v) }

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
		manual: manual,
		tick:   tick,
		epoch:  time.Now(),
		done:   make(chan struct{}),
		spin:   opts.Spin,
	}
	r.inbox.Init(size)
	r.extMay.Store(&noRun)
	r.SetPanicHandler(opts.PanicHandler)
	return r
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

// Manual reports whether r was made by NewManual (driven by its caller,
// no thread of its own).
func (r *Reactor) Manual() bool { return r.manual }

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

// owedTurn is a turn a loop owes another reactor (Reactor.owed; Linux
// hand-offs, handoff_linux.go).
type owedTurn struct {
	r *Reactor
	// kept: r's sleeping flag was left set (oweKept), so nobody holds its
	// kick duty: the turn needs no giving back, and a turn that cannot
	// run wakes r as any producer would (wakeLoop, never a bare kick).
	kept bool
}
