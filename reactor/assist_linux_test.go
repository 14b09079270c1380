//go:build linux

package reactor

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// waitParked waits until r's loop is parked in epoll_wait. gnet's Polling
// fallback (the asyncsteps_polling tag) never parks: the test is skipped.
func waitParked(t *testing.T, r *Reactor) {
	t.Helper()
	if forcePolling {
		t.Skip("the Polling fallback never parks: nothing to assist or hand off")
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.loopG.Load() != parkedG {
		if time.Now().After(deadline) {
			t.Fatal("the loop never parked")
		}
		runtime.Gosched()
	}
}

// closedAfterParking starts a reactor, waits until its loop parks, closes
// it and waits for Run to return: a reactor every lending path must refuse.
func closedAfterParking(t *testing.T) *Reactor {
	t.Helper()
	c, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- c.Run() }()
	waitParked(t, c)
	_ = c.Close()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	return c
}

// pushQuiet puts a call in r's ring without waking the loop: only an
// assist (or a later wake-up) runs it. A test's way to make sure the
// assist, not the loop, runs a task.
func pushQuiet(t *testing.T, r *Reactor, cb func(unsafe.Pointer, uint64)) {
	t.Helper()
	if _, ok := r.inbox.TryPushPos(task{cb: cb, kind: taskCall}); !ok {
		t.Fatal("ring full")
	}
}

// A task run by an assist runs on the assisting goroutine as the loop
// (IsSameThread, IsLoopGoroutine), and what it registers works once the
// loop has its word back: a timer the loop's timerfd was not armed for
// fires on time (the assist re-arms it), and a descriptor watched from the
// assisting goroutine wakes the loop when it becomes readable.
func TestAssistRunsWorkThatArmsTimersAndWatches(t *testing.T) {
	r := startLoop(t, Options{CPU: -1})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	type seen struct{ same, loopG bool }
	ran := make(chan seen, 1)
	fired := make(chan seen, 1)
	readable := make(chan seen, 1)
	var armedAt time.Time
	onRead := func(unsafe.Pointer, int, Event) {
		var buf [8]byte
		_, _ = unix.Read(p[0], buf[:])
		_ = r.Unwatch(p[0])
		_ = unix.Close(p[0])
		readable <- seen{r.IsSameThread(), r.IsLoopGoroutine()}
	}
	me := make(chan uintptr, 1)
	waitParked(t, r)
	pushQuiet(t, r, func(unsafe.Pointer, uint64) {
		armedAt = time.Now()
		r.xAfter(20*time.Millisecond, func(unsafe.Pointer, uint64) {
			fired <- seen{r.IsSameThread(), r.IsLoopGoroutine()}
		}, nil, 0)
		if err := r.xWatch(p[0], InterestRead, onRead, nil); err != nil {
			t.Error(err)
		}
		ran <- seen{r.IsSameThread(), r.IsLoopGoroutine()}
		me <- r.loopG.Load()
	})
	if !r.Assist() {
		t.Fatal("Assist did not run a parked loop's turn")
	}
	select {
	case s := <-ran:
		if !s.same || !s.loopG {
			t.Fatalf("inside an assist: IsSameThread %v, IsLoopGoroutine %v; want both true", s.same, s.loopG)
		}
	default:
		t.Fatal("the assist returned without running the posted task")
	}
	if r.IsSameThread() || r.IsLoopGoroutine() {
		t.Fatal("after the assist the caller still counts as the loop")
	}
	if got := <-me; got == parkedG || got == 0 {
		t.Fatalf("loop word inside the assist: %#x", got)
	}
	s := <-fired
	if time.Since(armedAt) < 20*time.Millisecond {
		t.Fatal("the timer fired early")
	}
	if !s.same {
		t.Fatal("the timer's callback did not run as the loop")
	}
	if _, err := unix.Write(p[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	if s := <-readable; !s.same {
		t.Fatal("the I/O callback did not run as the loop")
	}
}

// Assist does nothing where it must not: on a manual reactor, before Run,
// on a running loop, from a loop's own callback (another reactor's turn
// must not run inside it), from inside an assist, and after Close.
func TestAssistRefusals(t *testing.T) {
	if NewManual().Assist() {
		t.Fatal("Assist ran a manual reactor")
	}
	idle, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	if idle.Assist() {
		t.Fatal("Assist ran a reactor before Run")
	}
	_ = idle.Close()
	a := startLoop(t, Options{CPU: -1})
	b := startLoop(t, Options{CPU: -1})
	fromLoop := make(chan bool, 1)
	waitParked(t, b)
	a.xPost(func(unsafe.Pointer, uint64) { fromLoop <- b.Assist() }, nil, 0)
	if <-fromLoop {
		t.Fatal("a loop's callback assisted another reactor")
	}
	nested := make(chan bool, 1)
	waitParked(t, a)
	waitParked(t, b)
	pushQuiet(t, a, func(unsafe.Pointer, uint64) { nested <- b.Assist() })
	if !a.Assist() {
		t.Fatal("Assist did not run a parked loop's turn")
	}
	if <-nested {
		t.Fatal("an assist's callback assisted another reactor")
	}
	busy := make(chan struct{})
	release := make(chan struct{})
	a.xPost(func(unsafe.Pointer, uint64) { close(busy); <-release }, nil, 0)
	<-busy
	if a.Assist() {
		t.Fatal("Assist ran a reactor whose loop is running")
	}
	close(release)
	c := closedAfterParking(t)
	if c.Assist() {
		t.Fatal("Assist ran a closed reactor")
	}
}

// Close racing goroutines that post and assist: every post accepted runs
// exactly once, Close returns, Run returns nil, and nothing hangs.
func TestAssistRacingClose(t *testing.T) {
	racingClose(t, Options{CPU: -1}, func(r *Reactor, task func(unsafe.Pointer, uint64)) bool {
		ok := r.xPost(task, nil, 0)
		r.Assist()
		return ok
	})
}

// racingClose runs 20 rounds in which 4 goroutines offer tasks to a fresh
// reactor (made with o) through offer while Close races them: every task
// offer reports accepted runs exactly once, never two at once, Close
// returns and Run returns nil.
func racingClose(t *testing.T, o Options, offer func(r *Reactor, task func(unsafe.Pointer, uint64)) bool) {
	t.Helper()
	for round := 0; round < 20; round++ {
		r, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan error, 1)
		go func() { ran <- r.Run() }()
		var accepted, done, inside atomic.Int64
		task := func(unsafe.Pointer, uint64) {
			if inside.Add(1) != 1 {
				t.Error("two callbacks at once")
			}
			done.Add(1)
			inside.Add(-1)
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if offer(r, task) {
						accepted.Add(1)
					}
				}
			}()
		}
		time.Sleep(time.Duration(round%5) * time.Millisecond) // Close at varying points of the race
		_ = r.Close()
		close(stop)
		wg.Wait()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		if a, d := accepted.Load(), done.Load(); a != d {
			t.Fatalf("round %d: %d tasks accepted, %d ran", round, a, d)
		}
	}
}

// Many goroutines posting and assisting one reactor at once: callbacks
// still run one at a time (the loop word), each exactly once.
func TestAssistManyGoroutinesOneAtATime(t *testing.T) {
	r := startLoop(t, Options{CPU: -1})
	const goroutines, each = 16, 2000
	var inside, overlaps atomic.Int32
	var n atomic.Int64
	cb := func(unsafe.Pointer, uint64) {
		if inside.Add(1) != 1 {
			overlaps.Add(1)
		}
		if !r.IsSameThread() {
			overlaps.Add(1)
		}
		n.Add(1)
		inside.Add(-1)
	}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				r.xPost(cb, nil, 0)
				r.Assist()
			}
		}()
	}
	wg.Wait()
	for n.Load() != goroutines*each {
		r.Assist()
		runtime.Gosched()
	}
	if o := overlaps.Load(); o != 0 {
		t.Fatalf("%d callbacks overlapped or ran off the loop word", o)
	}
}

// An idle group stays idle: 16 parked reactors (no spinning, no periodic
// tick) use almost no CPU. The process's own CPU time (utime+stime, as
// /proc/self/stat has them, from getrusage) over a second, or over
// ASYNCSTEPS_IDLE_WINDOW (ASYNCSTEPS_IDLE_WINDOW=10s is the window the
// idle-CPU target is stated over): under 1% of one CPU.
//
// The window is the reactors', not the collector's: a GC cycle of the
// garbage the package's earlier tests left (15.6 ms in one window of a
// -count=3 run at load 21, against about 1 ms when the test runs alone)
// is not the group's CPU. So the heap is collected and returned to the OS
// before the window (nothing left for the scavenger either) and the GC is
// off during it; every goroutine of the process still counts, the
// reactors' included. With the GC off, the group's own allocation would
// cost it no collection: so the window may allocate less than the
// runtime's smallest heap goal (4 MiB, the least that starts a GC), or
// the test fails on that instead (an idle group allocates nothing).
func TestIdleGroupUsesNoCPU(t *testing.T) {
	window := time.Second
	if v := os.Getenv("ASYNCSTEPS_IDLE_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("ASYNCSTEPS_IDLE_WINDOW=%q: want a positive duration", v)
		}
		window = d
	}
	g, err := NewGroup(16, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()
	for _, r := range g.Reactors() {
		for !r.sleeping.Load() { // asleep (parked, on the fast path)
			time.Sleep(time.Millisecond)
		}
	}
	debug.FreeOSMemory()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := processCPU(t)
	time.Sleep(window)
	used := processCPU(t) - cpu0
	runtime.ReadMemStats(&ms1)
	if used > window/100 {
		t.Fatalf("an idle group of 16 reactors used %v of CPU in %v (%d GCs, %d B allocated meanwhile)", used, window, ms1.NumGC-ms0.NumGC, ms1.TotalAlloc-ms0.TotalAlloc)
	}
	if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc >= idleAllocBound {
		t.Fatalf("an idle group of 16 reactors allocated %d B in %v (%d GCs): a GC's worth, which the window kept off", alloc, window, ms1.NumGC-ms0.NumGC)
	}
	t.Logf("an idle group of 16 reactors used %v of CPU in %v, allocated %d B", used, window, ms1.TotalAlloc-ms0.TotalAlloc)
}

// idleAllocBound is the runtime's smallest heap goal (GOGC=100's 4 MiB):
// an idle window that allocates as much would have had a GC.
const idleAllocBound = 4 << 20

// processCPU is the process's user and system time so far.
func processCPU(t *testing.T) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A loop's callback that posts to a parked reactor runs that reactor's
// turn itself once the callback has returned (a hand-off): the posted
// callback runs as b's loop on a's goroutine, b's own loop stays parked,
// and b is left asleep as producers know it, so a later post from any
// goroutine still wakes it.
func TestHandOffBetweenLoops(t *testing.T) {
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	b := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	waitParked(t, b)
	for !b.sleeping.Load() {
		runtime.Gosched()
	}
	type seen struct {
		onB, onA     bool
		poster, runs uintptr
	}
	got := make(chan seen, 1)
	var poster uintptr
	a.xPost(func(unsafe.Pointer, uint64) {
		poster = a.loopG.Load()
		b.xPost(func(unsafe.Pointer, uint64) {
			got <- seen{b.IsSameThread(), a.IsSameThread(), poster, b.loopG.Load()}
		}, nil, 0)
	}, nil, 0)
	s := <-got
	if !s.onB || s.runs != s.poster {
		t.Fatalf("the handed-off callback ran on %#x, the poster is %#x (IsSameThread %v)", s.runs, s.poster, s.onB)
	}
	if !s.onA {
		t.Fatal("the poster's goroutine lost a's word during the hand-off")
	}
	waitParked(t, b)
	for !b.sleeping.Load() {
		runtime.Gosched()
	}
	later := make(chan bool, 1)
	b.xPost(func(unsafe.Pointer, uint64) { later <- b.IsSameThread() }, nil, 0)
	if !<-later {
		t.Fatal("a post after the hand-off did not run on b's loop")
	}
}

// Loops handing work back and forth while the group closes: every post
// accepted runs once and every loop ends cleanly.
func TestHandOffRacingClose(t *testing.T) {
	for round := 0; round < 10; round++ {
		g, err := NewGroup(3, Options{Spin: NoSpin})
		if err != nil {
			t.Fatal(err)
		}
		g.Start()
		rs := g.Reactors()
		var accepted, done atomic.Int64
		var bounce func(arg unsafe.Pointer, hop uint64)
		bounce = func(_ unsafe.Pointer, hop uint64) {
			done.Add(1)
			if rs[hop%3].xPost(bounce, nil, hop+1) {
				accepted.Add(1)
			}
		}
		for i := range 3 {
			if rs[i].xPost(bounce, nil, uint64(i+1)) {
				accepted.Add(1)
			}
		}
		time.Sleep(time.Duration(round%4) * time.Millisecond)
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		if a, d := accepted.Load(), done.Load(); a != d {
			t.Fatalf("round %d: %d posts accepted, %d ran", round, a, d)
		}
	}
}

// A handed-off turn that gives the poster work (a post back to it, which
// is local: the poster's goroutine holds its word) must not let the poster
// sleep on it: the poster looks again after paying (found by the syncprim
// stress tests: a Mutex handed back stalled).
func TestHandOffWorkBackToThePosterRuns(t *testing.T) {
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	b := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	for round := 0; round < 200; round++ {
		waitParked(t, a)
		waitParked(t, b)
		back := make(chan struct{})
		a.xPost(func(unsafe.Pointer, uint64) {
			b.xPost(func(unsafe.Pointer, uint64) {
				a.xPost(func(unsafe.Pointer, uint64) { close(back) }, nil, 0)
			}, nil, 0)
		}, nil, 0)
		select {
		case <-back:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the post back to the poster never ran", round)
		}
	}
}

// A long assisted turn (a step that computes or blocks for a while) must
// not keep the loop's thread busy: the loop, woken by I/O meanwhile, waits
// for its word back without spinning a core for the whole turn.
func TestLoopWaitingForALongAssistUsesLittleCPU(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	read := make(chan struct{}, 1)
	onRead := func(unsafe.Pointer, int, Event) {
		var buf [8]byte
		_, _ = unix.Read(p[0], buf[:])
		_ = r.Unwatch(p[0])
		_ = unix.Close(p[0])
		read <- struct{}{}
	}
	var err error
	onLoop(r, func() { err = r.xWatch(p[0], InterestRead, onRead, nil) })
	if err != nil {
		t.Fatal(err)
	}
	const hold = 300 * time.Millisecond
	var used time.Duration
	waitParked(t, r)
	pushQuiet(t, r, func(unsafe.Pointer, uint64) {
		// Wake the loop's epoll_wait, then hold the word.
		if _, err := unix.Write(p[1], []byte{1}); err != nil {
			t.Error(err)
		}
		cpu0 := processCPU(t)
		time.Sleep(hold)
		used = processCPU(t) - cpu0
	})
	if !r.Assist() {
		t.Fatal("Assist did not run a parked loop's turn")
	}
	<-read // and the loop goes on once it has its word back
	if used > hold/5 {
		t.Fatalf("the process used %v of CPU while an assisted turn held the loop's word for %v", used, hold)
	}
	t.Logf("%v of CPU while an assist held the loop's word for %v", used, hold)
}

// A task posted with PostLazy to a parked loop runs once its poster pays
// the wake-up it owes, by assisting or by Wake, whichever it does; nothing
// runs it twice, and a loop that is awake takes it by itself.
func TestPostLazyRunsOnceAssistedOrWoken(t *testing.T) {
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run() }()
	defer func() {
		_ = r.Close()
		<-ran
	}()
	var runs atomic.Int64
	ranCh := make(chan struct{}, 64)
	cb := func(unsafe.Pointer, uint64) { runs.Add(1); ranCh <- struct{}{} }
	for i := range 40 {
		if !X.PostLazy(r, cb, nil, uint64(i)) {
			t.Fatal("PostLazy refused on an open reactor")
		}
		if i%2 == 0 || !r.Assist() {
			X.Wake(r)
		}
		select {
		case <-ranCh:
		case <-time.After(5 * time.Second):
			t.Fatalf("post %d: lazily posted task never ran", i)
		}
	}
	if n := runs.Load(); n != 40 {
		t.Fatalf("%d runs, want 40", n)
	}
}
