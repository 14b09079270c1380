//go:build linux

package reactor

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/storerel"
)

// A task PostRun runs on a parked loop is one post from another
// goroutine: Metrics.TasksRun counts it once and Metrics.TimersFired (the
// loop's own Immediates and local posts) not at all, whichever way the
// caller's turn runs it: directly (nothing queued), or behind local work
// the parked loop still has (a turn run in its place that ran out of
// iterations leaves some). Each turn is one iteration when the task readies
// nothing. The counters are read inside the tasks, on the loop word.
func TestReview2Round6PostRunCountsOnce(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	me := goid.Current()
	read := func() (Metrics, bool) {
		ch := make(chan Metrics, 1)
		var on bool
		waitParked(t, r)
		if !X.PostRun(r, func(unsafe.Pointer, uint64) {
			on = goid.Current() == me
			ch <- r.LoopMetrics()
		}, nil, 0) {
			t.Fatal("PostRun refused on an open reactor")
		}
		return <-ch, on
	}
	m1, on1 := read()
	m2, on2 := read()
	if !on1 || !on2 {
		t.Skip("the loop woke before a PostRun: no direct turn to count")
	}
	if d := m2.TasksRun - m1.TasksRun; d != 1 {
		t.Errorf("direct turn: TasksRun +%d, want +1", d)
	}
	if d := m2.TimersFired - m1.TimersFired; d != 0 {
		t.Errorf("direct turn: TimersFired +%d, want +0 (no timer, no local post)", d)
	}
	if d := m2.Iterations - m1.Iterations; d != 1 {
		t.Errorf("direct turn: Iterations +%d, want +1", d)
	}

	// Local work left on the parked loop: a local post made under its
	// word (as by a turn run in its place), then the PostRun.
	waitParked(t, r)
	if !r.loopG.CompareAndSwap(parkedG, me) {
		t.Skip("the loop woke: nothing to leave queued")
	}
	local := make(chan bool, 1)
	r.postLocal(func(unsafe.Pointer, uint64) { local <- true }, nil, 0)
	storerel.Uintptr(&r.loopG, parkedG)
	_, on3 := read() // behind the local post
	<-local
	m4, on4 := read() // directly: its count is in before it reads
	if !on3 || !on4 {
		t.Skip("the loop woke before a PostRun: its turn ran the queued work")
	}
	if d := m4.TasksRun - m2.TasksRun; d != 2 {
		t.Errorf("behind local work, then direct: TasksRun +%d, want +2", d)
	}
	if d := m4.TimersFired - m2.TimersFired; d != 1 {
		t.Errorf("behind local work, then direct: TimersFired +%d, want +1 (the local post alone; a PostRun task is TasksRun's)", d)
	}
}

// A task run directly by PostRun that panics: the PanicHandler gets it
// once, on the caller, as the loop; the post is counted as any; the word,
// the assist slot and nAway are all given back; the reactor goes on, both
// for the next caller's turn and for its own loop (a post to a running
// loop, which runs on the loop's goroutine).
func TestReview2Round6DirectPanicLeavesAllUsable(t *testing.T) {
	type caught struct {
		v    any
		g    uintptr
		same bool
	}
	var r *Reactor
	got := make(chan caught, 2)
	r = startLoop(t, Options{CPU: -1, Spin: NoSpin, PanicHandler: func(v any) {
		got <- caught{v, goid.Current(), r.IsSameThread()}
	}})
	me := goid.Current()
	var before Metrics
	waitParked(t, r)
	X.PostRun(r, func(unsafe.Pointer, uint64) { before = r.LoopMetrics() }, nil, 0)
	waitParked(t, r)
	if !X.PostRun(r, func(unsafe.Pointer, uint64) { panic("direct") }, nil, 0) {
		t.Fatal("PostRun refused on an open reactor")
	}
	c := <-got
	if c.v != "direct" || !c.same {
		t.Fatalf("PanicHandler got %v (as the loop: %v)", c.v, c.same)
	}
	select {
	case c := <-got:
		t.Fatalf("PanicHandler called twice (%v)", c.v)
	default:
	}
	if r.loopG.Load() == me {
		t.Fatal("the caller kept the loop word after the panic")
	}
	for i := range assistants {
		if assistants[i].Load() == me {
			t.Fatalf("assist slot %d still holds the caller", i)
		}
	}
	if n := nAway.Load(); n != 0 {
		t.Fatalf("nAway %d after the turn", n)
	}
	var after Metrics
	onCaller := make(chan bool, 1)
	waitParked(t, r)
	X.PostRun(r, func(unsafe.Pointer, uint64) {
		after = r.LoopMetrics()
		onCaller <- goid.Current() == me && r.IsLoopGoroutine()
	}, nil, 0)
	direct := <-onCaller
	if c.g == me && direct {
		// Both turns were the caller's: the panicking one counted as a
		// task and one iteration, as a task that returns.
		if d := after.TasksRun - before.TasksRun; d != 2 {
			t.Errorf("TasksRun +%d over the panicking turn and the next, want +2", d)
		}
		if d := after.Iterations - before.Iterations; d != 2 {
			t.Errorf("Iterations +%d over the panicking turn and the next, want +2", d)
		}
	}
	// The loop itself: busy with a task, it takes the next post itself.
	busy := make(chan struct{})
	release := make(chan struct{})
	where := make(chan uintptr, 1)
	r.xPost(func(unsafe.Pointer, uint64) { close(busy); <-release }, nil, 0)
	<-busy
	X.PostRun(r, func(unsafe.Pointer, uint64) { where <- goid.Current() }, nil, 0)
	close(release)
	if g := <-where; g == me {
		t.Fatal("the task posted to a running loop ran on the caller")
	}
}

// Close racing many goroutines whose PostRun runs direct turns that arm
// a timer (the timerfd set from the caller) and stop it again: every
// accepted task runs once, each goroutine is refused once Close has
// returned, Run returns nil, and no goroutine is left in an assist slot
// or counted away from home.
func TestReview2Round6CloseRacingDirectTurns(t *testing.T) {
	const goroutines = 16
	for round := 0; round < 10; round++ {
		r, err := New(Options{CPU: -1, Spin: NoSpin})
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan error, 1)
		go func() { ran <- r.Run() }()
		waitParked(t, r)
		var accepted, done, inside, direct atomic.Int64
		var ids [goroutines]atomic.Uintptr
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				me := goid.Current()
				ids[i].Store(me)
				task := func(unsafe.Pointer, uint64) {
					if inside.Add(1) != 1 {
						t.Error("two callbacks at once")
					}
					if goid.Current() == me {
						direct.Add(1)
					}
					tm := r.xAfter(time.Hour, func(unsafe.Pointer, uint64) {}, nil, 0)
					if (round+i)%2 == 0 {
						r.Stop(tm) // half the turns leave the timer: armed, then disarmed by the next
					}
					done.Add(1)
					inside.Add(-1)
				}
				<-start
				for X.PostRun(r, task, nil, 0) { // refused once closed
					accepted.Add(1)
				}
			}()
		}
		close(start)
		// Close once some turns ran: after the first accepted task.
		for accepted.Load() == 0 {
			time.Sleep(10 * time.Microsecond) // a yield, not a timing: the loop ends on the count
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		if a, d := accepted.Load(), done.Load(); a != d {
			t.Fatalf("round %d: %d tasks accepted, %d ran", round, a, d)
		}
		for i := range assistants {
			g := assistants[i].Load()
			for j := range ids {
				if g != 0 && g == ids[j].Load() {
					t.Fatalf("round %d: assist slot %d left taken by goroutine %d", round, i, j)
				}
			}
		}
		if n := nAway.Load(); n != 0 {
			t.Fatalf("round %d: nAway %d after every goroutine returned", round, n)
		}
		if round == 9 {
			t.Logf("last round: %d of %d tasks ran directly on their callers", direct.Load(), done.Load())
		}
	}
}

// A task run directly by PostRun that ends its goroutine (runtime.Goexit:
// t.FailNow in a callback does) never returns to PostRun; its deferred end
// gives the word and the assist slot back and wakes the loop, so the
// reactor goes on: its loop takes the next post, and the next caller runs
// its own direct turn.
func TestReview2Round6DirectGoexitGivesAllBack(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	waitParked(t, r)
	type seen struct {
		g      uintptr
		direct bool
	}
	ran := make(chan seen, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		me := goid.Current()
		X.PostRun(r, func(unsafe.Pointer, uint64) {
			ran <- seen{me, goid.Current() == me}
			runtime.Goexit()
		}, nil, 0)
		t.Error("PostRun returned after its task called Goexit")
	}()
	s := <-ran
	<-exited
	if !s.direct {
		t.Skip("the loop woke before the PostRun: no direct turn")
	}
	if g := r.loopG.Load(); g == s.g {
		t.Fatal("the exited goroutine still holds the loop word")
	}
	for i := range assistants {
		if assistants[i].Load() == s.g {
			t.Fatalf("assist slot %d still holds the exited goroutine", i)
		}
	}
	if n := nAway.Load(); n != 0 {
		t.Fatalf("nAway %d after the goroutine exited", n)
	}
	next := make(chan bool, 1)
	waitParked(t, r) // the wake-up abandonTurn gave, then the loop parks again
	me := goid.Current()
	X.PostRun(r, func(unsafe.Pointer, uint64) { next <- goid.Current() == me && r.IsSameThread() }, nil, 0)
	if !<-next {
		t.Log("the next PostRun ran on the loop, not on the caller")
	}
	onLoop(r, func() {}) // the loop itself runs a post
}

// A goroutine that gets the identity of a loop goroutine whose Run
// returned (the runtime reuses a g once it exits) is no loop: isLoop is
// false, with every running loop in its slot and with one counted off its
// slot (the map answers then), and it may claim an assist. The loop's own
// identity, while it ran, was a loop for isLoop.
func TestReview2Round6IsLoopAfterIdentityReuse(t *testing.T) {
	r, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run() }()
	var g uintptr
	var wasLoop bool
	onLoop(r, func() { g = goid.Current(); wasLoop = isLoop(g) })
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if !wasLoop {
		t.Fatal("isLoop false on the running loop")
	}
	type seen struct {
		reused, loop, loopOff, claimed bool
	}
	reused := false
	for i := 0; i < 10000 && !reused; i++ {
		ch := make(chan seen)
		go func() {
			me := goid.Current()
			var s seen
			s.reused = me == g
			s.loop = isLoop(me)
			loopsOffSlot.Add(1) // as if some loop lost its slot: the map answers
			s.loopOff = isLoop(me)
			loopsOffSlot.Add(-1)
			if slot, ok := claimAssist(me); ok {
				s.claimed = true
				releaseAssist(slot)
			}
			ch <- s
		}()
		s := <-ch
		if s.loop || s.loopOff {
			t.Fatalf("isLoop true for a goroutine outside any loop (slot %v, map %v; the dead loop's identity: %v)", s.loop, s.loopOff, s.reused)
		}
		if s.reused && !s.claimed {
			t.Fatal("the goroutine with the dead loop's identity was refused an assist")
		}
		reused = s.reused
	}
	if !reused {
		t.Log("the loop goroutine's identity was not reused here: isLoop checked on other goroutines only")
	}
}
