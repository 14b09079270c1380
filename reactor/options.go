package reactor

import (
	"errors"
	"fmt"
	"time"
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
	// work posted from other threads before it sleeps. A reply expected
	// from another reactor within that time then costs neither side a
	// wake-up (an eventfd write and a thread wake-up, 3-5 µs) and runs in
	// the same turn, for a core that spins meanwhile: worth it with spare
	// cores, a loss when cores are shared (profiles/notes/README.md,
	// "Cross-reactor hops" and "Adaptive spin"). A spin ends early at the
	// next timer's deadline and at Close; I/O that becomes ready during a
	// spin waits for its end, and once a turn's spins that found work add
	// up to 25 µs (or Spin, if longer) the loop looks at I/O before it
	// spins again.
	//
	// 0 (the default) is the adaptive spin: the loop spins only once it has
	// seen posted work wake it soon after it went to sleep (two reactors
	// handing work back and forth, as a contended syncprim.Mutex does),
	// for about twice that gap and at most 25 µs, with at most half the
	// process's Ps (GOMAXPROCS, at least one) spinning at once; a spin
	// that finds nothing turns it off until such wake-ups come again, less
	// eagerly after each failure. A loop woken only by I/O, by timers or by
	// posts that come later than that never spins: an idle reactor sleeps.
	// Under gnet's Polling fallback it never spins. NoSpin turns spinning
	// off; a positive Spin spins that long before every sleep. Other
	// negative values are refused.
	Spin time.Duration
	// Unlocked runs an unpinned loop (CPU -1) without locking its
	// goroutine to an OS thread: Run then blocks in epoll_wait like any
	// goroutine in a syscall, and the runtime may resume the loop on
	// whichever thread is awake. One request's round trip through stepsd
	// over loopback on 2 shared CPUs: p50 64 µs locked, 34 µs unlocked
	// (profiles/README.md). A pinned loop needs its thread: Unlocked with
	// Pin is refused. An unlocked loop that keeps going to sleep passes
	// the Go scheduler (runtime.Gosched) before it blocks, at most every
	// 2 ms, so that the runtime's sysmon never takes it for a goroutine
	// hogging its P and takes the P away from under its system calls.
	Unlocked bool
	// PanicHandler receives, on the loop, the value of a panic recovered
	// from a callback; the loop then goes on. nil prints it to standard
	// error. NewGroup gives it to every reactor of the group.
	PanicHandler func(v any)
	// OwnThread keeps every callback of a real reactor on its loop's own
	// goroutine (and so, unless Unlocked, its own OS thread, the pinned one
	// with Pin). By default a goroutine may run the loop's turn in its
	// place while the loop is parked: Promise.Wait and Batch.Wait for its
	// flows, Execute from a goroutine outside the loops, another loop that
	// posted to it (reactor doc, "Who the loop is"), which saves a thread
	// wake-up on each side, and a goroutine may borrow the parked loop's
	// word to apply a result and, outside the loops, run the turn that
	// follows (X.TakeParkedRun: engine's External). Set it for callbacks that depend on the
	// thread itself (thread-local state of a C library, CPU-local data);
	// each call from outside then wakes the loop and waits for it.
	OwnThread bool
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
	case o.Spin < 0 && o.Spin != NoSpin:
		return fmt.Errorf("reactor: Options.Spin %v: want NoSpin (%v) for no spin, 0 for the adaptive spin, or how long to spin", o.Spin, NoSpin)
	}
	if o.Pin {
		return checkCPU(o.CPU)
	}
	return nil
}

// DefaultRingSize is the capacity of the submission ring when Options.RingSize is 0.
const DefaultRingSize = 1 << 14
