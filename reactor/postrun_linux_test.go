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
	"golang.org/x/sys/unix"
)

// PostRun from an ordinary goroutine to a parked loop runs the task before
// it returns, on the caller, as the loop; a timer it arms fires on time
// and a descriptor it watches reports, once the loop has its word back.
func TestPostRunRunsOnTheCallerWhenParked(t *testing.T) {
	r := startLoop(t, Options{CPU: -1})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	type seen struct {
		g           uintptr
		same, loopG bool
	}
	ran := make(chan seen, 1)
	fired := make(chan seen, 1)
	readable := make(chan seen, 1)
	var armedAt time.Time
	onRead := func(unsafe.Pointer, int, Event) {
		var buf [8]byte
		_, _ = unix.Read(p[0], buf[:])
		_ = r.Unwatch(p[0])
		_ = unix.Close(p[0])
		readable <- seen{goid.Current(), r.IsSameThread(), r.IsLoopGoroutine()}
	}
	task := func(unsafe.Pointer, uint64) {
		armedAt = time.Now()
		r.xAfter(20*time.Millisecond, func(unsafe.Pointer, uint64) {
			fired <- seen{goid.Current(), r.IsSameThread(), r.IsLoopGoroutine()}
		}, nil, 0)
		if err := r.xWatch(p[0], InterestRead, onRead, nil); err != nil {
			t.Error(err)
		}
		ran <- seen{goid.Current(), r.IsSameThread(), r.IsLoopGoroutine()}
	}
	waitParked(t, r)
	if !X.PostRun(r, task, nil, 0) {
		t.Fatal("PostRun refused on an open reactor")
	}
	me := goid.Current()
	select {
	case s := <-ran:
		if s.g != me || !s.same || !s.loopG {
			t.Fatalf("task: on the caller %v, IsSameThread %v, IsLoopGoroutine %v; want all true", s.g == me, s.same, s.loopG)
		}
	default:
		t.Fatal("PostRun to a parked loop returned without running the task")
	}
	if r.IsSameThread() || r.IsLoopGoroutine() {
		t.Fatal("after PostRun the caller still counts as the loop")
	}
	if s := <-fired; !s.same || !s.loopG || s.g == me {
		t.Fatalf("timer: IsSameThread %v, IsLoopGoroutine %v, on the caller %v", s.same, s.loopG, s.g == me)
	}
	if time.Since(armedAt) < 20*time.Millisecond {
		t.Fatal("the timer fired early")
	}
	if _, err := unix.Write(p[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	if s := <-readable; !s.same || !s.loopG {
		t.Fatal("the I/O callback did not run as the loop")
	}
}

// PostRun runs nothing on the caller where it must not: from a loop's
// callback (to another reactor), from inside an assist, on a loop that is
// running, on a manual reactor. The task still runs, once, on its loop.
func TestPostRunRefusals(t *testing.T) {
	m := NewManual()
	got := make(chan uintptr, 1)
	if !X.PostRun(m, func(unsafe.Pointer, uint64) { got <- goid.Current() }, nil, 0) {
		t.Fatal("PostRun refused on a manual reactor")
	}
	select {
	case <-got:
		t.Fatal("PostRun ran a manual reactor's task on the caller")
	default:
	}
	m.RunUntilIdle()
	<-got

	a := startLoop(t, Options{CPU: -1})
	b := startLoop(t, Options{CPU: -1})
	// b's own loop may run the task at once, on its thread, even before
	// the posting callback returns: what must not happen is the task
	// running on the poster's goroutine inside its callback. (A select
	// on where inside the callback could not tell the two apart: it
	// failed now and then under load.)
	where := make(chan uintptr, 1)
	var aG atomic.Uintptr
	var aReturned atomic.Bool
	inside := make(chan bool, 1)
	onB := func(unsafe.Pointer, uint64) {
		g := goid.Current()
		inside <- g == aG.Load() && !aReturned.Load()
		where <- g
	}
	waitParked(t, b)
	a.xPost(func(unsafe.Pointer, uint64) {
		aG.Store(goid.Current())
		X.PostRun(b, onB, nil, 0)
		aReturned.Store(true)
	}, nil, 0)
	if <-inside {
		t.Fatal("PostRun from a loop's callback ran another reactor's turn inside it")
	}
	<-where // and it ran after all (b's loop, or a's hand-off after the callback)
	waitParked(t, a)
	waitParked(t, b)
	me := goid.Current()
	pushQuiet(t, a, func(unsafe.Pointer, uint64) {
		X.PostRun(b, func(unsafe.Pointer, uint64) { where <- goid.Current() }, nil, 0)
	})
	if !a.Assist() {
		t.Fatal("Assist did not run a parked loop's turn")
	}
	// The assisting goroutine never runs b's turn (it is refused an
	// assist inside one), so the task ran elsewhere or it ran inside.
	if g := <-where; g == me {
		t.Fatal("PostRun inside an assist ran another reactor's turn inside the callback")
	}
	busy := make(chan struct{})
	release := make(chan struct{})
	a.xPost(func(unsafe.Pointer, uint64) { close(busy); <-release }, nil, 0)
	<-busy
	X.PostRun(a, func(unsafe.Pointer, uint64) { where <- goid.Current() }, nil, 0)
	close(release)
	if g := <-where; g == me {
		t.Fatal("PostRun ran a running loop's task on the caller")
	}
}

// Close racing goroutines that PostRun (and so run the loop's turns):
// every accepted task runs exactly once, Run returns nil, nothing hangs.
func TestPostRunRacingClose(t *testing.T) {
	racingClose(t, Options{CPU: -1}, func(r *Reactor, task func(unsafe.Pointer, uint64)) bool {
		return X.PostRun(r, task, nil, 0)
	})
}

// Many goroutines calling PostRun on one reactor at once: callbacks run
// one at a time under the loop word, each exactly once.
func TestPostRunManyGoroutinesOneAtATime(t *testing.T) {
	startersOneAtATime(t, startLoop(t, Options{CPU: -1}), 16, 2000, func(r *Reactor, cb func(unsafe.Pointer, uint64)) bool {
		return X.PostRun(r, cb, nil, 0)
	})
}

// startersOneAtATime has goroutines goroutines start each callbacks on r
// at once through start (a PostRun or RunParked path; false: refused):
// every callback runs exactly once, one at a time, under the loop word.
func startersOneAtATime(t *testing.T, r *Reactor, goroutines, each int, start func(*Reactor, func(unsafe.Pointer, uint64)) bool) {
	t.Helper()
	var inside, overlaps atomic.Int32
	var n, onCaller atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			me := goid.Current()
			cb := func(unsafe.Pointer, uint64) {
				if inside.Add(1) != 1 || !r.IsSameThread() || !r.IsLoopGoroutine() {
					overlaps.Add(1)
				}
				if goid.Current() == me {
					onCaller.Add(1)
				}
				n.Add(1)
				inside.Add(-1)
			}
			for range each {
				if !start(r, cb) {
					t.Error("refused on an open reactor")
					return
				}
			}
		}()
	}
	wg.Wait()
	onLoop(r, func() {}) // what the callers left to the loop has run
	if o := overlaps.Load(); o != 0 {
		t.Fatalf("%d callbacks overlapped or ran off the loop word", o)
	}
	if got := n.Load(); got != int64(goroutines*each) {
		t.Fatalf("%d callbacks ran, want %d", got, goroutines*each)
	}
	t.Logf("%d of %d tasks ran on their callers", onCaller.Load(), goroutines*each)
}

// A reactor made with OwnThread runs every callback on its loop's own
// goroutine: no PostRun, Assist or loop hand-off runs its turn elsewhere.
func TestOwnThreadKeepsCallbacksOnTheLoop(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, OwnThread: true})
	other := startLoop(t, Options{CPU: -1})
	var loop uintptr
	onLoop(r, func() { loop = goid.Current() })
	where := make(chan uintptr, 1)
	cb := func(unsafe.Pointer, uint64) { where <- goid.Current() }
	for i := range 20 {
		waitParked(t, r)
		switch i % 3 {
		case 0:
			X.PostRun(r, cb, nil, 0)
		case 1:
			pushQuiet(t, r, cb)
			if r.Assist() {
				t.Fatal("Assist ran an OwnThread reactor's turn")
			}
			X.Wake(r)
		case 2:
			other.xPost(func(unsafe.Pointer, uint64) { r.xPost(cb, nil, 0) }, nil, 0)
		}
		if g := <-where; g != loop {
			t.Fatalf("case %d: a callback ran off the OwnThread loop's goroutine", i%3)
		}
	}
}

// A turn run in the parked loop's place (PostRun, Assist, a hand-off)
// reads the clock, as the loop does when it wakes: CoarseNow in its
// callbacks lags the true time by at most that turn, not by however long
// the loop was parked (engine's per-name flow time reads it).
func TestBorrowedTurnCoarseNowIsFresh(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	got := make(chan int64, 1)
	cb := func(unsafe.Pointer, uint64) { got <- r.CoarseNow() }
	for i := range 6 {
		waitParked(t, r)
		before := nanotime()
		switch i % 2 {
		case 0:
			X.PostRun(r, cb, nil, 0)
		case 1:
			pushQuiet(t, r, cb)
			if !r.Assist() {
				X.Wake(r) // someone else took the turn: not what this case checks
				<-got
				continue
			}
		}
		if now := <-got; now < before {
			t.Fatalf("case %d: CoarseNow in a borrowed turn is %v behind the clock read before it", i%2, time.Duration(before-now))
		}
	}
}

// A PanicHandler that panics (a program that wants a panicking callback
// to be fatal) ends a loop's goroutine, and so the process. In a turn run
// in the parked loop's place the panic reaches the goroutine that ran it
// (Execute's or Wait's caller), which may recover it (net/http recovers a
// handler's panic): the loop must then have its word back, and go on, not
// stay parked for good behind a word nobody holds.
func TestBorrowedTurnPanicGivesTheWordBack(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin, PanicHandler: func(v any) { panic(v) }})
	boom := func(unsafe.Pointer, uint64) { panic("boom") }
	run := func(how int) (recovered any) {
		defer func() { recovered = recover() }()
		switch how {
		case 0:
			X.PostRun(r, boom, nil, 0)
		case 1:
			pushQuiet(t, r, boom)
			if !r.Assist() {
				return "no assist"
			}
		}
		return nil
	}
	for how := range 2 {
		waitParked(t, r)
		if got := run(how); got != "boom" {
			if got == "no assist" {
				X.Wake(r)
				t.Skip("the loop woke before the assist; nothing checked")
			}
			t.Fatalf("case %d: the callback's panic did not reach the caller: %v", how, got)
		}
		ran := make(chan struct{})
		if !r.xPost(func(unsafe.Pointer, uint64) { close(ran) }, nil, 0) {
			t.Fatalf("case %d: Post refused", how)
		}
		select {
		case <-ran:
		case <-time.After(10 * time.Second): // a hang guard, not a timing
			r.loopG.Store(parkedG) // let the cleanup's Close end the loop
			t.Fatalf("case %d: the loop never ran again after a borrowed turn panicked", how)
		}
	}
	if n := nAway.Load(); n != 0 {
		t.Fatalf("%d assists left counted away from home", n)
	}
	for i := range assistants {
		if g := assistants[i].Load(); g != 0 {
			t.Fatalf("assist slot %d left taken by %#x", i, g)
		}
	}
}

// A task that PostRun runs directly on a parked loop (nothing else was
// queued) and that panics reaches the PanicHandler, as a queued one does;
// PostRun reports it accepted, the caller gives the word back, and the
// next task runs.
func TestPostRunDirectPanicIsContained(t *testing.T) {
	caught := make(chan any, 1)
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin, PanicHandler: func(v any) { caught <- v }})
	waitParked(t, r)
	if !X.PostRun(r, func(unsafe.Pointer, uint64) { panic("boom") }, nil, 0) {
		t.Fatal("PostRun refused on an open reactor")
	}
	if v := <-caught; v != "boom" {
		t.Fatalf("PanicHandler got %v", v)
	}
	ran := make(chan bool, 1)
	waitParked(t, r)
	X.PostRun(r, func(unsafe.Pointer, uint64) { ran <- r.IsSameThread() }, nil, 0)
	if !<-ran {
		t.Fatal("the task after a panic did not run as the loop")
	}
	if r.IsSameThread() {
		t.Fatal("the caller still holds the loop word")
	}
}

// A goroutine whose home slot in assistants is taken assists from another
// slot, counted in nAway: from inside that turn it is still refused a
// second assist (a PostRun to another parked reactor runs elsewhere), and
// its release leaves no count and no slot behind.
func TestAssistAwayFromHomeRefusesNesting(t *testing.T) {
	a := startLoop(t, Options{CPU: -1})
	b := startLoop(t, Options{CPU: -1})
	me := goid.Current()
	home := assistHome(me)
	if !assistants[home].CompareAndSwap(0, me+1) { // another "goroutine" at home
		t.Skip("the home slot is in use by another test's goroutine")
	}
	defer assistants[home].Store(0)
	type seen struct {
		g    uintptr
		away int32
	}
	outer := make(chan seen, 1)
	inner := make(chan uintptr, 1)
	waitParked(t, a)
	waitParked(t, b)
	X.PostRun(a, func(unsafe.Pointer, uint64) {
		outer <- seen{goid.Current(), nAway.Load()}
		X.PostRun(b, func(unsafe.Pointer, uint64) { inner <- goid.Current() }, nil, 0)
	}, nil, 0)
	o := <-outer
	if o.g != me {
		t.Skip("a's loop woke before the PostRun: nothing checked")
	}
	if o.away != 1 {
		t.Fatalf("nAway in the turn is %d, want 1", o.away)
	}
	if g := <-inner; g == me {
		t.Fatal("a PostRun inside a turn assisted away from home ran another reactor's turn inside it")
	}
	if n := nAway.Load(); n != 0 {
		t.Fatalf("nAway is %d after the turn", n)
	}
	for i := range assistants {
		if i != home && assistants[i].Load() == me {
			t.Fatalf("slot %d still holds the caller", i)
		}
	}
}

// A direct turn (PostRun to a parked loop with nothing queued) that
// cancels the loop's pending timer and arms an earlier one leaves the
// wheel as long as it was: the turn must still see the change (the
// wheel's Changes count) and re-arm the timerfd, or the earlier timer
// would wait for the canceled one's deadline. A direct turn that touches
// no timer leaves a pending one to the loop, which fires it on time.
func TestDirectTurnRearmsAfterATimerSwap(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	fired := make(chan uintptr, 2)
	mark := func(unsafe.Pointer, uint64) { fired <- goid.Current() }
	var far Handle
	armed := make(chan struct{})
	r.Immediate(func() {
		far = r.Deferred(time.Hour, func() { fired <- 0 })
		close(armed)
	})
	<-armed
	waitParked(t, r)
	var begun time.Time
	ran := make(chan bool, 1)
	if !X.PostRun(r, func(unsafe.Pointer, uint64) {
		begun = time.Now()
		r.Cancel(far)
		r.xAfter(20*time.Millisecond, mark, nil, 0)
		ran <- r.wheel.Len() == 1
	}, nil, 0) {
		t.Fatal("PostRun refused on an open reactor")
	}
	if !<-ran {
		t.Fatal("the swap did not leave one timer in the wheel")
	}
	// Turns that change nothing, meanwhile: the timer stays the loop's.
	me := goid.Current()
	for range 50 {
		X.PostRun(r, func(unsafe.Pointer, uint64) {}, nil, 0)
	}
	select {
	case g := <-fired:
		if g == 0 {
			t.Fatal("the canceled timer fired")
		}
		if g == me {
			t.Fatal("a turn that changed no timer fired the loop's")
		}
		if time.Since(begun) < 20*time.Millisecond {
			t.Fatal("the timer fired early")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the earlier timer never fired: the timerfd was not re-armed after the swap")
	}
}

// A task PostRun runs on a parked loop is one post from another
// goroutine: Metrics.TasksRun counts it once and Metrics.TimersFired (the
// loop's own Immediates and local posts) not at all, whichever way the
// caller's turn runs it: directly (nothing queued), or behind local work
// the parked loop still has (a turn run in its place that ran out of
// iterations leaves some). Each turn is one iteration when the task readies
// nothing. The counters are read inside the tasks, on the loop word.
func TestPostRunCountsOnce(t *testing.T) {
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
func TestDirectPanicLeavesAllUsable(t *testing.T) {
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
func TestCloseRacingDirectTurns(t *testing.T) {
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
func TestDirectGoexitGivesAllBack(t *testing.T) {
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
func TestIsLoopAfterIdentityReuse(t *testing.T) {
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

// A nil callback given to PostRun on a parked loop runs directly
// (directTurn), and one given to PostLazy goes through the ring: both
// reach the panic handler with the nil Post's name, as on the local
// queue, and the reactor goes on.
func TestNilPostNamedThroughPostRunAndPostLazy(t *testing.T) {
	panics := make(chan any, 4)
	r := startLoop(t, Options{CPU: -1, PanicHandler: func(v any) { panics <- v }})
	for _, tc := range []struct {
		name string
		post func() bool
	}{
		{"PostRun", func() bool { return X.PostRun(r, nil, nil, 0) }},
		{"PostLazy", func() bool {
			ok := X.PostLazy(r, nil, nil, 0)
			X.Wake(r)
			return ok
		}},
	} {
		waitParked(t, r)
		if !tc.post() {
			t.Fatalf("%s(nil) reported false on an open reactor", tc.name)
		}
		if v := <-panics; v != "reactor: Post with a nil callback" {
			t.Fatalf("%s(nil): panic %v, want one naming the nil Post", tc.name, v)
		}
	}
}

// underParkedWord runs fn holding r's loop word while its loop is parked,
// as a borrower does (borrow_linux.go), and gives the word back without
// waking the loop.
func underParkedWord(t *testing.T, r *Reactor, fn func()) {
	t.Helper()
	me := goid.Current()
	for {
		waitParked(t, r)
		if r.loopG.CompareAndSwap(parkedG, me) {
			break
		}
	}
	fn()
	storerel.Uintptr(&r.loopG, parkedG)
}

// A PostRun task is counted once, in Metrics.TasksRun, whichever way the
// parked loop's turn takes it: run directly (directTurn, nothing else
// waiting), or queued behind local work already there (postRun's local
// branch), where it must not also count as a local task taken in
// TimersFired (the local queue's head counts those, LoopMetrics).
func TestPostRunCountedOnceInMetrics(t *testing.T) {
	r := startLoop(t, Options{CPU: -1})
	ran := make(chan int, 2)
	task := func(_ unsafe.Pointer, aux uint64) { ran <- int(aux) }
	for _, tc := range []struct {
		name   string
		queued bool // local work waits on the parked loop: the local branch
	}{
		{"direct", false},
		{"behind local work", true},
	} {
		var before, after Metrics
		underParkedWord(t, r, func() {
			before = r.LoopMetrics()
			if tc.queued {
				r.postLocal(task, nil, 1) // a local post the loop was not woken for
			}
		})
		if !X.PostRun(r, task, nil, 2) {
			t.Fatalf("%s: PostRun refused on an open reactor", tc.name)
		}
		if tc.queued {
			if got := <-ran; got != 1 {
				t.Fatalf("%s: ran %d first, want the local task", tc.name, got)
			}
		}
		if got := <-ran; got != 2 {
			t.Fatalf("%s: ran %d, want the PostRun task", tc.name, got)
		}
		underParkedWord(t, r, func() { after = r.LoopMetrics() })
		wantTimers := uint64(0)
		if tc.queued {
			wantTimers = 1 // the local post, not the PostRun task
		}
		if d := after.TasksRun - before.TasksRun; d != 1 {
			t.Errorf("%s: TasksRun grew by %d, want 1", tc.name, d)
		}
		if d := after.TimersFired - before.TimersFired; d != wantTimers {
			t.Errorf("%s: TimersFired grew by %d, want %d", tc.name, d, wantTimers)
		}
		if d := after.Iterations - before.Iterations; d != 1 {
			t.Errorf("%s: Iterations grew by %d, want 1", tc.name, d)
		}
	}
}
