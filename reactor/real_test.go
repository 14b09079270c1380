//go:build linux

package reactor_test

// Tests of the real (threaded) reactor: New + Run on its own goroutine, the
// wall clock, eventfd/timerfd, the MPSC ring with backpressure, Close.
//
// Nothing here passes or fails on how fast something happens, except
// "never early" for timers and a generous hang guard (reactortest.Hang) that only
// a deadlock can reach.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/leakcheck"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// ------------------------------------------------------------------ helpers

// settleGoroutines waits (bounded) for the goroutine count to drop back to
// want and reports the last count seen.
func settleGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 200 && n > want; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// ------------------------------------------------------------------ timers

// timerRec is one Deferred call: bounds of the instant it was scheduled,
// its delay, and what happened when it fired.
type timerRec struct {
	before, after time.Time // around the Deferred call: the reactor's "scheduled at" lies in between
	d             time.Duration
	waited        time.Duration // time.Since(before) when it fired
	firedAt       int           // position in the firing order, -1 = not fired
}

// randomDelays returns n delays in [0, 30ms]: whole milliseconds (many
// equal deadlines) and arbitrary microseconds.
func randomDelays(rng *rand.Rand, n int) []time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		if i%2 == 0 {
			ds[i] = time.Duration(rng.IntN(31)) * time.Millisecond
		} else {
			ds[i] = time.Duration(rng.IntN(30_001)) * time.Microsecond
		}
	}
	return ds
}

// checkTimers checks "never early" for every timer and deadline order for
// every pair: with deadlines D = scheduled + d and the tick rounding up,
//   - i scheduled before j and D_i <= D_j: i fires first (earlier tick, or
//     the same tick and then scheduling order);
//   - D_i + tick <= D_j: i fires first whatever the scheduling order.
//
// Both use the bounds around each Deferred call, so they never blame the
// reactor for the test's own measurement slack. It returns the max lateness.
func checkTimers(t *testing.T, recs []timerRec, tick time.Duration) time.Duration {
	t.Helper()
	var maxLate time.Duration
	for i, rc := range recs {
		if rc.firedAt < 0 {
			t.Fatalf("timer %d (delay %v) never fired", i, rc.d)
		}
		if rc.waited < rc.d {
			t.Errorf("timer %d fired early: %v after it was scheduled, delay %v", i, rc.waited, rc.d)
		}
		maxLate = max(maxLate, rc.waited-rc.d)
	}
	bad := 0
	for i := range recs {
		for j := range recs {
			if i == j {
				continue
			}
			a, b := recs[i], recs[j]
			latestDi := a.after.Add(a.d)    // D_i is at most this
			earliestDj := b.before.Add(b.d) // D_j is at least this
			mustPrecede := (i < j && !latestDi.After(earliestDj)) || !latestDi.Add(tick).After(earliestDj)
			if mustPrecede && a.firedAt > b.firedAt {
				bad++
				if bad <= 5 {
					t.Errorf("timer %d (delay %v) fired after timer %d (delay %v, scheduled %v later): deadline order broken (D_j - D_i >= %v)",
						i, a.d, j, b.d, b.before.Sub(a.before), earliestDj.Sub(latestDi))
				}
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d pairs out of deadline order in all", bad)
	}
	return maxLate
}

// Timers scheduled on the loop, under the real clock.
func TestRealDeferredOnLoopFireInDeadlineOrderNeverEarly(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1})
	const n = 600
	rng := rand.New(rand.NewPCG(1, 2))
	ds := randomDelays(rng, n)
	recs := make([]timerRec, n)
	var fired atomic.Int32
	done := make(chan struct{})
	order := 0 // loop-owned
	reactortest.OnLoop(t, r, func() {
		for i := range recs {
			recs[i].d = ds[i]
			recs[i].firedAt = -1
			h := deferRec(r, recs, i, &order, &fired, n, done)
			if h.IsZero() {
				panic("Deferred on the loop returned the zero Handle")
			}
		}
	})
	reactortest.Wait(t, done, "all timers")
	maxLate := checkTimers(t, recs, r.Tick())
	t.Logf("on-loop timers: %d fired, max lateness %v (tick %v)", n, maxLate, r.Tick())
	reactortest.CloseAndWait(t, r, runErr)
}

// Timers scheduled from another goroutine go through the ring; the same
// deadline order and never-early rules hold, measured from the Deferred call.
func TestRealDeferredOffLoopFireInDeadlineOrderNeverEarly(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1})
	const n = 600
	rng := rand.New(rand.NewPCG(3, 4))
	ds := randomDelays(rng, n)
	recs := make([]timerRec, n)
	var fired atomic.Int32
	done := make(chan struct{})
	order := 0 // loop-owned
	for i := range recs {
		recs[i].d = ds[i]
		recs[i].firedAt = -1
	}
	for i := range recs {
		h := deferRec(r, recs, i, &order, &fired, n, done)
		if h.IsZero() {
			t.Fatal("Deferred returned the zero Handle on an open reactor")
		}
		if i%50 == 49 {
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond) // spread over several ticks
		}
	}
	reactortest.Wait(t, done, "all timers")
	maxLate := checkTimers(t, recs, r.Tick())
	t.Logf("off-loop timers: %d fired, max lateness %v (tick %v)", n, maxLate, r.Tick())
	reactortest.CloseAndWait(t, r, runErr)
}

// A Deferred from another goroutine is due "delay after it was scheduled",
// not "delay after the loop got round to taking it from the ring". With the
// loop busy (a callback blocked) while two timers are scheduled, the one
// with the earlier deadline must still fire first.
func TestRealDeferredOffLoopDeadlineCountsFromTheCall(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1})
	unblock := blockLoop(t, r) // released by cleanup too, whatever happens

	var mu sync.Mutex
	var got []string
	done := make(chan struct{}, 2)
	note := func(s string) func() {
		return func() { mu.Lock(); got = append(got, s); mu.Unlock(); done <- struct{}{} }
	}
	const dA = 200 * time.Millisecond
	aBefore := time.Now()
	r.Deferred(dA, note("A")) // due at aAfter+200ms at the latest
	aAfter := time.Now()
	time.Sleep(10 * time.Millisecond) // B is scheduled at least 10ms later
	// B is due 5ms after A's latest possible deadline.
	bBefore := time.Now()
	dB := aAfter.Add(dA + 5*time.Millisecond).Sub(bBefore)
	if dB <= 0 {
		t.Skip("the test goroutine was descheduled for too long to set up the case")
	}
	r.Deferred(dB, note("B"))
	unblock() // the loop takes both only now
	reactortest.Wait(t, chanOf(done), "first timer")
	reactortest.Wait(t, chanOf(done), "second timer")
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != "A" {
		t.Fatalf("fired %v; A (delay %v, scheduled %v before B) is due 5ms before B (delay %v) and must fire first",
			got, dA, bBefore.Sub(aBefore), dB)
	}
	reactortest.CloseAndWait(t, r, runErr)
}

// ------------------------------------------------------ cross-goroutine work

type floodState struct {
	next   []int // per producer: the sequence number expected next (loop-owned)
	ran    int   // loop-owned
	total  int
	errs   []string // loop-owned
	done   chan struct{}
	handle bool // loop-owned: IsSameThread seen false in a callback
}

func (s *floodState) got(p, seq int, same bool) {
	if !same && !s.handle {
		s.handle = true
		s.errs = append(s.errs, "IsSameThread false inside a callback")
	}
	if seq != s.next[p] {
		if len(s.errs) < 10 {
			s.errs = append(s.errs, fmt.Sprintf("producer %d: task %d ran when %d was expected", p, seq, s.next[p]))
		}
	}
	s.next[p] = seq + 1
	s.ran++
	if s.ran == s.total {
		close(s.done)
	}
}

var floodR atomic.Pointer[reactor.Reactor]

func floodPost(arg unsafe.Pointer, aux uint64) {
	s := (*floodState)(arg)
	s.got(int(aux>>32), int(uint32(aux)), floodR.Load().IsSameThread())
}

// Immediate and Post from many goroutines at once: every task runs exactly
// once, each producer's order holds, nothing is lost, even when the ring is
// tiny and producers keep hitting backpressure.
func TestRealFloodFromManyGoroutines(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ring, per int
	}{
		{"default-ring", 0, 20_000},
		{"ring-16", 16, 20_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const producers = 8
			r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1, RingSize: tc.ring})
			floodR.Store(r)
			s := &floodState{next: make([]int, producers), total: producers * tc.per, done: make(chan struct{})}
			var zero atomic.Int32
			var wg sync.WaitGroup
			start := make(chan struct{})
			for p := 0; p < producers; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for i := 0; i < tc.per; i++ {
						if i%2 == 0 {
							if h := r.Immediate(func() { s.got(p, i, r.IsSameThread()) }); h.IsZero() {
								zero.Add(1)
							}
						} else if !reactor.X.Post(r, floodPost, unsafe.Pointer(s), uint64(p)<<32|uint64(i)) {
							zero.Add(1)
						}
					}
				}()
			}
			t0 := time.Now()
			close(start)
			wg.Wait()
			if z := zero.Load(); z != 0 {
				t.Fatalf("%d submissions refused on an open reactor", z)
			}
			reactortest.Wait(t, s.done, "every task to run")
			t.Logf("%d tasks through a ring of %d in %v", s.total, tc.ring, time.Since(t0))
			reactortest.Sync(t, r) // nothing runs twice: a task would show up as out of order
			reactortest.OnLoop(t, r, func() {
				if s.ran != s.total {
					s.errs = append(s.errs, fmt.Sprintf("ran %d tasks, want %d", s.ran, s.total))
				}
			})
			for _, e := range s.errs {
				t.Error(e)
			}
			for p, n := range s.next {
				if n != tc.per {
					t.Errorf("producer %d: last task run was %d, want %d", p, n-1, tc.per-1)
				}
			}
			reactortest.CloseAndWait(t, r, runErr)
		})
	}
}

// ------------------------------------------------ IsSameThread and panics

func TestRealIsSameThread(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1})
	if r.IsSameThread() {
		t.Fatal("IsSameThread true on the test goroutine")
	}
	var inImm, inDef, inPost, inOther atomic.Int32 // 1 = false, 2 = true
	b := func(v bool) int32 {
		if v {
			return 2
		}
		return 1
	}
	done := make(chan struct{}, 3)
	r.Immediate(func() {
		inImm.Store(b(r.IsSameThread()))
		ch := make(chan bool)
		go func() { ch <- r.IsSameThread() }()
		inOther.Store(b(<-ch))
		done <- struct{}{}
	})
	r.Deferred(2*time.Millisecond, func() { inDef.Store(b(r.IsSameThread())); done <- struct{}{} })
	reactor.X.Post(r, func(unsafe.Pointer, uint64) { inPost.Store(b(r.IsSameThread())); done <- struct{}{} }, nil, 0)
	for i := 0; i < 3; i++ {
		reactortest.Wait(t, chanOf(done), "callbacks")
	}
	if inImm.Load() != 2 || inDef.Load() != 2 || inPost.Load() != 2 {
		t.Fatalf("IsSameThread inside Immediate/Deferred/Post callbacks = %v/%v/%v (2 = true)", inImm.Load(), inDef.Load(), inPost.Load())
	}
	if inOther.Load() != 1 {
		t.Fatal("IsSameThread true on a goroutine started by a callback")
	}
	reactortest.CloseAndWait(t, r, runErr)
	if r.IsSameThread() {
		t.Fatal("IsSameThread true on the test goroutine after Close")
	}
}

func chanOf(ch chan struct{}) <-chan struct{} { return ch }

func TestRealPanicIsContained(t *testing.T) {
	panics := make(chan any, 8)
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1, PanicHandler: func(v any) { panics <- v }})
	r.Immediate(func() { panic("boom-immediate") })
	reactor.X.Post(r, func(unsafe.Pointer, uint64) { panic("boom-post") }, nil, 0)
	r.Deferred(time.Millisecond, func() { panic(errors.New("boom-deferred")) })
	reactortest.OnLoop(t, r, func() {
		r.Immediate(func() { panic("boom-on-loop") })
	})
	var got []string
	for i := 0; i < 4; i++ {
		select {
		case v := <-panics:
			got = append(got, fmt.Sprint(v))
		case <-time.After(reactortest.Hang):
			t.Fatalf("PanicHandler got %v, want 4 values", got)
		}
	}
	sort.Strings(got)
	want := []string{"boom-deferred", "boom-immediate", "boom-on-loop", "boom-post"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("PanicHandler got %v, want %v", got, want)
	}
	// The loop goes on.
	ran := make(chan struct{})
	r.Deferred(time.Millisecond, func() { close(ran) })
	reactortest.Wait(t, ran, "a task after the panics")
	reactortest.Sync(t, r)
	reactortest.CloseAndWait(t, r, runErr)
}

// --------------------------------------------------------- Cancel, IsValid

// blockLoop blocks the loop in a callback until the returned func is called.
func blockLoop(t *testing.T, r *reactor.Reactor) (unblock func()) {
	t.Helper()
	release := make(chan struct{})
	blocked := make(chan struct{})
	r.Immediate(func() { close(blocked); <-release })
	reactortest.Wait(t, blocked, "loop blocked")
	var once sync.Once
	u := func() { once.Do(func() { close(release) }) }
	t.Cleanup(u)
	return u
}

func TestRealCancelAndIsValidOfImmediateFromOtherGoroutines(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1})
	if r.IsValid(reactor.Handle{}) {
		t.Fatal("zero Handle valid")
	}
	r.Cancel(reactor.Handle{}) // no effect, no panic
	unblock := blockLoop(t, r)
	var ran1, ran2 atomic.Bool
	h1 := r.Immediate(func() { ran1.Store(true) })
	h2 := r.Immediate(func() { ran2.Store(true) })
	if h1 == h2 || h1.IsZero() || h2.IsZero() {
		t.Fatalf("handles %v %v", h1, h2)
	}
	if !r.IsValid(h1) || !r.IsValid(h2) {
		t.Fatal("pending Immediate not valid")
	}
	// Cancel from a goroutine that did not submit it.
	canceled := make(chan struct{})
	go func() { r.Cancel(h1); close(canceled) }()
	reactortest.Wait(t, canceled, "Cancel")
	if r.IsValid(h1) {
		t.Fatal("canceled Immediate still valid")
	}
	if !r.IsValid(h2) {
		t.Fatal("Cancel of h1 invalidated h2")
	}
	unblock()
	reactortest.Sync(t, r)
	if ran1.Load() {
		t.Fatal("canceled Immediate ran")
	}
	if !ran2.Load() {
		t.Fatal("Immediate did not run")
	}
	if r.IsValid(h2) {
		t.Fatal("Immediate that ran is still valid")
	}
	r.Cancel(h2) // already ran: no error, no effect
	r.Cancel(h1) // twice
	reactortest.CloseAndWait(t, r, runErr)
}

func TestRealCancelAndIsValidOfDeferredFromOtherGoroutines(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1})
	var ranCanceled, ranKept atomic.Int32
	sentinel := make(chan struct{})
	// Half a second, not less: the checks and cancels below must come
	// before these fire even under -race on a loaded machine.
	hc := r.Deferred(500*time.Millisecond, func() { ranCanceled.Add(1) })
	hk := r.Deferred(500*time.Millisecond, func() { ranKept.Add(1) })
	hLong := r.Deferred(time.Hour, func() { ranCanceled.Add(1) })
	reactortest.Sync(t, r) // the loop has taken them into its wheel
	for _, h := range []reactor.Handle{hc, hk, hLong} {
		if !r.IsValid(h) {
			t.Fatalf("pending Deferred %v not valid", h)
		}
	}
	var wg sync.WaitGroup
	for _, h := range []reactor.Handle{hc, hLong} {
		wg.Add(1)
		go func() { defer wg.Done(); r.Cancel(h) }()
	}
	wg.Wait()
	if r.IsValid(hc) || r.IsValid(hLong) {
		t.Fatal("canceled Deferred still valid")
	}
	if !r.IsValid(hk) {
		t.Fatal("Deferred not canceled became invalid")
	}
	// Fires after the 500ms ones by deadline order.
	r.Deferred(520*time.Millisecond, func() { close(sentinel) })
	reactortest.Wait(t, sentinel, "sentinel timer")
	if ranCanceled.Load() != 0 {
		t.Fatal("canceled Deferred ran")
	}
	if ranKept.Load() != 1 {
		t.Fatalf("kept Deferred ran %d times", ranKept.Load())
	}
	if r.IsValid(hk) {
		t.Fatal("Deferred that fired still valid")
	}

	// Timers made on the loop (wheel handles), checked and canceled from
	// another goroutine.
	var hLoop reactor.Handle
	reactortest.OnLoop(t, r, func() { hLoop = r.Deferred(time.Hour, func() { ranCanceled.Add(1) }) })
	if !r.IsValid(hLoop) {
		t.Fatal("loop-side Deferred not valid from another goroutine")
	}
	r.Cancel(hLoop)
	if r.IsValid(hLoop) {
		t.Fatal("loop-side Deferred canceled from another goroutine still valid")
	}
	reactortest.CloseAndWait(t, r, runErr)
	if ranCanceled.Load() != 0 {
		t.Fatal("canceled Deferred ran")
	}
}

// A Cancel that returned before the task ran means the task does not run —
// even for a task scheduled on the loop (a wheel timer) that is already due.
// (If Cancel instead waits for the loop, it cannot return while the loop is
// held here; the test then only checks that nothing deadlocks.)
func TestRealCancelFromOtherGoroutineOfDueLoopTimer(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1})
	var ran atomic.Bool
	hCh := make(chan reactor.Handle)
	canceled := make(chan struct{})
	var cancelReturnedFirst atomic.Bool
	done := make(chan struct{})
	// outer runs from the ring; inner is a loop-side Immediate (wheel), and
	// it schedules f the same way, then holds the loop while another
	// goroutine cancels f.
	r.Immediate(func() {
		r.Immediate(func() {
			hCh <- r.Immediate(func() { ran.Store(true) })
			select {
			case <-canceled:
				cancelReturnedFirst.Store(true)
			case <-time.After(time.Second): // Cancel waits for the loop: let it
			}
			r.Immediate(func() { close(done) })
		})
	})
	h := <-hCh
	go func() { r.Cancel(h); close(canceled) }()
	reactortest.Wait(t, done, "loop to go on")
	reactortest.Wait(t, canceled, "Cancel to return")
	reactortest.Sync(t, r)
	if cancelReturnedFirst.Load() && ran.Load() {
		t.Fatal("a loop-side Immediate ran although Cancel from another goroutine had returned before it could run")
	}
	if r.IsValid(h) {
		t.Fatal("canceled handle valid")
	}
	t.Logf("Cancel returned while the loop was held: %v; task ran: %v", cancelReturnedFirst.Load(), ran.Load())
	reactortest.CloseAndWait(t, r, runErr)
}

// Deferred from other goroutines, canceled at once from them, while the loop
// is busy taking such tasks: a Cancel that returned is never lost, and a
// pending Deferred is valid until then.
func TestRealDeferredCancelRacesTheLoop(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1})
	// The race is narrow; rounds make a lost cancel show up in most runs
	// (about a third of single rounds hit it here) while staying ~1s.
	const rounds, producers, per = 8, 4, 3000
	var ran, notValid atomic.Int32
	stillValid := 0
	for round := 0; round < rounds; round++ {
		hs := make([][]reactor.Handle, producers)
		var wg sync.WaitGroup
		for p := 0; p < producers; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(p), uint64(round)))
				for i := 0; i < per; i++ {
					h := r.Deferred(time.Hour, func() { ran.Add(1) })
					for k := rng.IntN(200); k > 0; k-- { // land at varied points of the loop's work
						_ = k * k
					}
					if !r.IsValid(h) {
						notValid.Add(1)
					}
					r.Cancel(h)
					hs[p] = append(hs[p], h)
				}
			}()
		}
		wg.Wait()
		reactortest.Sync(t, r)
		for p := range hs {
			for _, h := range hs[p] {
				if r.IsValid(h) {
					stillValid++
				}
			}
		}
	}
	if n := notValid.Load(); n != 0 {
		t.Errorf("%d pending Deferred (1 hour) reported not valid before Cancel", n)
	}
	if stillValid != 0 {
		t.Errorf("%d of %d Deferred still valid after Cancel returned (the cancel was lost; the timer will fire)", stillValid, rounds*producers*per)
	}
	reactortest.CloseAndWait(t, r, runErr)
	if ran.Load() != 0 {
		t.Fatalf("%d canceled Deferred ran", ran.Load())
	}
}

// ------------------------------------------------------------------ pinning

func TestRealPinnedToCPU(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	r, err0 := reactor.New(reactor.Options{CPU: 1, Pin: true})
	if err0 != nil {
		t.Fatal(err0)
	}
	runErr := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the pinned thread dies with this goroutine
		runErr <- r.Run()
	}()
	t.Cleanup(func() { _ = r.Close() })
	var set unix.CPUSet
	var err error
	reactortest.OnLoop(t, r, func() { err = unix.SchedGetaffinity(0, &set) })
	if err != nil {
		t.Fatal(err)
	}
	if set.Count() != 1 || !set.IsSet(1) {
		t.Fatalf("loop thread affinity: %d CPUs, CPU 1 set = %v; want only CPU 1", set.Count(), set.IsSet(1))
	}
	// A Deferred fires on the same pinned thread.
	fired := make(chan struct{})
	r.Deferred(time.Millisecond, func() {
		err = unix.SchedGetaffinity(0, &set)
		close(fired)
	})
	reactortest.Wait(t, fired, "timer")
	if err != nil || set.Count() != 1 || !set.IsSet(1) {
		t.Fatalf("timer callback thread affinity: %d CPUs (err %v)", set.Count(), err)
	}
	reactortest.CloseAndWait(t, r, runErr)
}

// Run pins the OS thread it runs on; when Run returns, that thread is
// handed back (to the caller, then to Go's scheduler) and must not stay
// pinned to one CPU.
func TestRealPinningDoesNotOutliveRun(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	r, err := reactor.New(reactor.Options{CPU: 1, Pin: true})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		runErr error
		after  unix.CPUSet
		err    error
	}
	res := make(chan result, 1)
	go func() {
		// Keep this thread to ourselves (and let it die with the
		// goroutine), so the check sees Run's thread and nothing leaks into
		// the rest of the test binary.
		runtime.LockOSThread()
		var x result
		x.runErr = r.Run()
		x.err = unix.SchedGetaffinity(0, &x.after)
		res <- x
	}()
	reactortest.Sync(t, r)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var x result
	select {
	case x = <-res:
	case <-time.After(reactortest.Hang):
		t.Fatal("Run did not return")
	}
	if x.runErr != nil || x.err != nil {
		t.Fatalf("Run = %v, SchedGetaffinity = %v", x.runErr, x.err)
	}
	if x.after.Count() != runtime.NumCPU() {
		t.Fatalf("after Run returned, its thread is still restricted to %d CPU(s) (runtime.NumCPU %d): Run leaves the pinning on a thread it hands back", x.after.Count(), runtime.NumCPU())
	}
}

// -------------------------------------------------------------------- Close

// Close while producers flood Immediate/Post/Deferred, the loop keeps
// rescheduling itself and engine flows run: Close and Run return nil,
// every task accepted before Close ran, everything after Close is refused.
func TestRealCloseWhileBusy(t *testing.T) {
	g0 := runtime.NumGoroutine()
	fd0 := leakcheck.FDs(t)
	r, err := reactor.New(reactor.Options{CPU: -1, RingSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- r.Run() }()

	var accepted, ran atomic.Int64
	var acceptedDeferred atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	postCb := func(arg unsafe.Pointer, _ uint64) { (*atomic.Int64)(arg).Add(1) }
	for p := 0; p < 6; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				switch i % 3 {
				case 0:
					if h := r.Immediate(func() { ran.Add(1) }); h.IsZero() {
						return
					}
					accepted.Add(1)
				case 1:
					if !reactor.X.Post(r, postCb, unsafe.Pointer(&ran), 0) {
						return
					}
					accepted.Add(1)
				default:
					if h := r.Deferred(time.Duration(i%5)*time.Millisecond, func() {}); h.IsZero() {
						return
					}
					acceptedDeferred.Add(1)
				}
			}
		}()
	}
	// The loop keeps itself busy: a chain of timers due at once.
	var spin func()
	spin = func() { r.Deferred(0, spin) }
	r.Immediate(spin)
	// Flows that wait, and flows that loop.
	var promises []*engine.Promise
	var flowsStarted atomic.Int32
	for i := 0; i < 50; i++ {
		root := engine.New(r)
		if i%10 != 0 {
			root.Add(func(as *engine.Steps) { flowsStarted.Add(1); as.WaitExternal() })
		} else {
			root.Add(func(as *engine.Steps) {
				flowsStarted.Add(1)
				as.Loop(func(as *engine.Steps) { as.Add(func(as *engine.Steps) {}) })
			})
		}
		promises = append(promises, root.Promise())
	}
	// Close once the loop is busy for real: every flow started and the
	// producers' work running.
	for deadline := time.Now().Add(reactortest.Hang); flowsStarted.Load() < 50 || ran.Load() < 1000; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("the loop did not get busy: %d flows started, %d tasks ran", flowsStarted.Load(), ran.Load())
		}
	}

	closed := make(chan error, 1)
	go func() { closed <- r.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(reactortest.Hang):
		t.Fatal("Close did not return while the reactor was busy")
	}
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
	case <-time.After(reactortest.Hang):
		t.Fatal("Run did not return")
	}
	stop.Store(true)
	wg.Wait()
	if a, n := accepted.Load(), ran.Load(); a != n {
		t.Fatalf("%d tasks accepted before Close (non-zero Handle / Post true), %d ran", a, n)
	}
	t.Logf("%d tasks accepted and run, %d Deferred accepted", accepted.Load(), acceptedDeferred.Load())
	for i, p := range promises {
		select {
		case <-p.Done():
		case <-time.After(reactortest.Hang):
			t.Fatalf("flow %d still waiting after Close", i)
		}
		_, err := p.Wait()
		var fe *engine.Error
		if !errors.As(err, &fe) || fe.Code != engine.Canceled || fe.Info != "reactor closed" {
			t.Fatalf("flow %d ended with %v, want Canceled: reactor closed", i, err)
		}
	}
	// After Close, from anywhere.
	if h := r.Immediate(func() { t.Error("ran after Close") }); !h.IsZero() {
		t.Fatal("Immediate after Close returned a Handle")
	}
	if h := r.Deferred(0, func() { t.Error("ran after Close") }); !h.IsZero() {
		t.Fatal("Deferred after Close returned a Handle")
	}
	if reactor.X.Post(r, postCb, unsafe.Pointer(&ran), 0) {
		t.Fatal("Post after Close reported success")
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if !r.Closed() {
		t.Fatal("Closed() false")
	}
	assertNoLeaks(t, fd0, g0)
}

// Close from several goroutines at once: all return nil, each only after
// the loop has stopped.
func TestRealConcurrentClose(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1})
	reactortest.Sync(t, r)
	var stopped atomic.Bool
	r.Immediate(func() {}) // some work in flight
	var wg sync.WaitGroup
	var bad atomic.Int32
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Close(); err != nil {
				bad.Add(1)
			}
			// The loop has stopped: nothing is accepted.
			if h := r.Immediate(func() { stopped.Store(true) }); !h.IsZero() {
				bad.Add(1)
			}
		}()
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d concurrent Close calls misbehaved", bad.Load())
	}
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(reactortest.Hang):
		t.Fatal("Run did not return after Close")
	}
	if stopped.Load() {
		t.Fatal("a task submitted after Close ran")
	}
}

// Close before Run: Close returns nil, the reactor's descriptors are
// closed, and a later Run returns nil at once (Run's doc: "It returns nil
// after Close").
func TestRealCloseBeforeRun(t *testing.T) {
	fd0 := leakcheck.FDs(t)
	r, err := reactor.New(reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	if leakcheck.FDs(t) <= fd0 {
		t.Fatal("New opened no descriptors?")
	}
	var ran atomic.Bool
	if h := r.Immediate(func() { ran.Store(true) }); h.IsZero() {
		t.Fatal("Immediate before Run refused")
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close before Run: %v", err)
	}
	if !ran.Load() {
		t.Fatal("a task accepted before Close did not run")
	}
	if fd := leakcheck.FDs(t); fd != fd0 {
		t.Fatalf("fds: %d before New, %d after Close", fd0, fd)
	}
	if h := r.Immediate(func() {}); !h.IsZero() {
		t.Error("Immediate after Close returned a Handle")
	}
	if r.IsSameThread() {
		t.Error("IsSameThread true on the goroutine that called Close before Run")
	}
	runErr := make(chan error, 1)
	go func() { runErr <- r.Run() }()
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatalf("Run after Close = %v, want nil", err)
		}
	case <-time.After(reactortest.Hang):
		t.Fatal("Run after Close blocks")
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// Close called on the loop: returns at once, the loop stops after the
// callback, Run returns nil; submissions after Close fail even on the loop.
func TestRealCloseOnTheLoop(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1})
	type res struct {
		err  error
		imm  reactor.Handle
		def  reactor.Handle
		post bool
	}
	out := make(chan res, 1)
	var lateRan atomic.Bool
	r.Immediate(func() {
		var x res
		x.err = r.Close()
		x.imm = r.Immediate(func() { lateRan.Store(true) })
		x.def = r.Deferred(0, func() { lateRan.Store(true) })
		x.post = reactor.X.Post(r, func(unsafe.Pointer, uint64) { lateRan.Store(true) }, nil, 0)
		out <- x
	})
	var x res
	select {
	case x = <-out:
	case <-time.After(reactortest.Hang):
		t.Fatal("Close on the loop blocked")
	}
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(reactortest.Hang):
		t.Fatal("Run did not return after Close on the loop")
	}
	if x.err != nil {
		t.Fatalf("Close on the loop: %v", x.err)
	}
	if !x.imm.IsZero() || !x.def.IsZero() || x.post {
		t.Errorf("submissions on the loop after Close were accepted: Immediate %v, Deferred %v, Post %v (Close's doc: they report failure)",
			!x.imm.IsZero(), !x.def.IsZero(), x.post)
	}
	if x.imm.IsZero() && x.def.IsZero() && !x.post && lateRan.Load() {
		t.Error("a task refused after Close ran")
	}
}

// A callback that keeps rescheduling itself with Immediate on the loop
// (a common "yield and go on" idiom) must not starve the rest of the loop:
// tasks from other goroutines, timers, and Close.
func TestRealSelfReschedulingImmediateDoesNotStarveTheLoop(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1})
	var stop atomic.Bool
	var spins atomic.Int64
	var spin func()
	spin = func() {
		if !stop.Load() {
			spins.Add(1)
			r.Immediate(spin)
		}
	}
	r.Immediate(spin)
	defer stop.Store(true)
	for spins.Load() == 0 {
		runtime.Gosched()
	}
	other := make(chan struct{})
	timer := make(chan struct{})
	r.Immediate(func() { close(other) })
	r.Deferred(time.Millisecond, func() { close(timer) })
	// A starvation guard, not a speed check: each needs microseconds, or
	// a millisecond for the timer.
	const guard = 2 * time.Second
	select {
	case <-other:
	case <-time.After(guard):
		t.Errorf("an Immediate from another goroutine did not run within %v while a callback rescheduled itself (%d spins so far): the loop is starved", guard, spins.Load())
	}
	select {
	case <-timer:
	case <-time.After(guard):
		t.Errorf("a 1ms Deferred did not fire within %v while a callback rescheduled itself (%d spins so far): the loop is starved", guard, spins.Load())
	}
	if t.Failed() {
		stop.Store(true) // let the loop out, so the rest of the test ends
	}
	closed := make(chan error, 1)
	go func() { closed <- r.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close = %v", err)
		}
	case <-time.After(guard):
		t.Errorf("Close did not return within %v while a callback rescheduled itself", guard)
		stop.Store(true)
		<-closed
	}
	if err := <-runErr; err != nil {
		t.Errorf("Run = %v", err)
	}
}

// Many reactors made, run and closed: no descriptor and no goroutine is left.
func TestRealNoLeaks(t *testing.T) {
	g0 := runtime.NumGoroutine()
	fd0 := leakcheck.FDs(t)
	for i := 0; i < 20; i++ {
		r, err := reactor.New(reactor.Options{CPU: -1})
		if err != nil {
			t.Fatal(err)
		}
		runErr := make(chan error, 1)
		go func() { runErr <- r.Run() }()
		done := make(chan struct{})
		r.Deferred(time.Millisecond, func() { close(done) })
		r.Deferred(time.Hour, func() {}) // armed timerfd at Close
		reactortest.Wait(t, done, "timer")
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-runErr; err != nil {
			t.Fatalf("Run = %v", err)
		}
	}
	// Closed without ever running.
	for i := 0; i < 5; i++ {
		r, err := reactor.New(reactor.Options{CPU: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	assertNoLeaks(t, fd0, g0)
}

// An idle reactor sleeps and is woken by a submission from another
// goroutine, over and over: no wake-up is lost.
func TestRealNoLostWakeups(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1})
	for i := 0; i < 2000; i++ {
		done := make(chan struct{})
		if i%2 == 0 {
			r.Immediate(func() { close(done) })
		} else {
			reactor.X.Post(r, func(arg unsafe.Pointer, _ uint64) { close(*(*chan struct{})(arg)) }, unsafe.Pointer(&done), 0)
		}
		reactortest.Wait(t, done, fmt.Sprintf("wake-up %d", i))
		if i%200 == 0 {
			time.Sleep(2 * time.Millisecond) // let it really fall asleep now and then
		}
	}
	reactortest.CloseAndWait(t, r, runErr)
}

// Close racing the loop's last look for work must never leave Close waiting
// on a loop asleep in the poller (found in review: the kick was drained).
func TestRealCloseNeverHangsRacingTheLoop(t *testing.T) {
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	for i := 0; i < rounds; i++ {
		r, err := reactor.New(reactor.Options{CPU: -1})
		if err != nil {
			t.Fatal(err)
		}
		runErr := make(chan error, 1)
		go func() { runErr <- r.Run() }()
		for j := 0; j < i%7; j++ {
			r.Immediate(func() {})
		}
		closed := make(chan struct{})
		go func() { r.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatalf("Close hung at round %d", i)
		}
		if err := <-runErr; err != nil {
			t.Fatal(err)
		}
	}
}

// Two loops flooding each other's tiny rings from their callbacks: a loop
// never waits for another loop's ring (that could deadlock both), so every
// task runs.
func TestRealLoopsPostingToEachOtherNeverDeadlock(t *testing.T) {
	a, errA := reactortest.StartRun(t, reactor.Options{CPU: -1, RingSize: 4})
	b, errB := reactortest.StartRun(t, reactor.Options{CPU: -1, RingSize: 4})
	const n = 20000
	var ranA, ranB atomic.Int64
	done := make(chan struct{}, 2)
	flood := func(from, to *reactor.Reactor, ran *atomic.Int64) {
		from.Immediate(func() {
			for i := 0; i < n; i++ {
				reactor.X.Post(to, func(unsafe.Pointer, uint64) { ran.Add(1) }, nil, 0)
			}
			done <- struct{}{}
		})
	}
	flood(a, b, &ranB)
	flood(b, a, &ranA)
	for i := 0; i < 2; i++ {
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("a loop is stuck posting to the other's full ring")
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for ranA.Load() != n || ranB.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("ran %d and %d of %d", ranA.Load(), ranB.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	reactortest.CloseAndWait(t, a, errA)
	reactortest.CloseAndWait(t, b, errB)
}

// assertNoLeaks checks that the fds and goroutines counted before a test's
// reactors were made are all that is left after they closed.
func assertNoLeaks(t *testing.T, fd0, g0 int) {
	t.Helper()
	if fd := leakcheck.FDs(t); fd != fd0 {
		t.Fatalf("fds: %d before, %d after", fd0, fd)
	}
	if g := settleGoroutines(g0); g > g0 {
		t.Fatalf("goroutines: %d before, %d after", g0, g)
	}
}

// deferRec schedules recs[i] (delay recs[i].d) and records when it fires:
// its wait from the Deferred call, and its place among the timers fired
// (order is loop-owned). done is closed when n timers have fired.
func deferRec(r *reactor.Reactor, recs []timerRec, i int, order *int, fired *atomic.Int32, n int32, done chan struct{}) reactor.Handle {
	recs[i].before = time.Now()
	h := r.Deferred(recs[i].d, func() {
		recs[i].waited = time.Since(recs[i].before)
		recs[i].firedAt = *order
		*order++
		if fired.Add(1) == n {
			close(done)
		}
	})
	recs[i].after = time.Now()
	return h
}
