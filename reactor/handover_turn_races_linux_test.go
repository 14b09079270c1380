//go:build linux

package reactor

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// What reaches the parked reactor while the handed-over flow runs in
// handOverTurn, on the borrowing loop's goroutine, with the
// reactor's sleeping flag left set.

// slimHandOver hands fn to parked b from a's loop until a round finds b
// parked, and fails unless fn ran in the hand-over turn (not the full
// one). inTurn is closed by the flow before fn.
func slimHandOver(t *testing.T, a, b *Reactor, fn func()) {
	t.Helper()
	slim := make(chan bool, 1)
	for !handOverFlow(t, a, b, func() {
		slim <- inHandOverTurn()
		fn()
	}) {
	}
	if !<-slim {
		t.Fatal("the flow ran in the full turn: the hand-over turn was not tested")
	}
}

// Work posted to the parked reactor while its handed-over flow runs (the
// flow waits until the post has returned): by a goroutine, by a third
// loop, by the borrowing loop itself from inside the flow, and a timer a
// goroutine defers through the ring. Each runs once, as b's loop, and b
// parks with its flag set again, woken by the next post. A post whose
// kick were lost (the flag is left set during the turn, so the poster
// kicks a loop whose word is borrowed) would never run: nothing else
// wakes b here.
func TestPostDuringHandOverTurn(t *testing.T) {
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	b := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	c := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	type ran struct{ same bool }
	posters := []struct {
		name  string
		delay time.Duration
		post  func(done chan<- ran) // returns once the post is made
	}{
		{name: "goroutine", post: func(done chan<- ran) {
			posted := make(chan struct{})
			go func() {
				b.xPost(func(unsafe.Pointer, uint64) { done <- ran{b.IsSameThread()} }, nil, 0)
				close(posted)
			}()
			<-posted
		}},
		{name: "third loop", post: func(done chan<- ran) {
			// Asked from a goroutine: a post from a's goroutine would make
			// a owe c a turn, which a pays only after this flow.
			posted := make(chan struct{})
			go c.xPost(func(unsafe.Pointer, uint64) {
				b.xPost(func(unsafe.Pointer, uint64) { done <- ran{b.IsSameThread()} }, nil, 0)
				close(posted)
			}, nil, 0)
			<-posted
		}},
		{name: "borrowing loop", post: func(done chan<- ran) {
			b.xPost(func(unsafe.Pointer, uint64) { done <- ran{b.IsSameThread()} }, nil, 0)
		}},
		{name: "deferred by a goroutine", delay: 5 * time.Millisecond, post: func(done chan<- ran) {
			posted := make(chan struct{})
			go func() {
				b.Deferred(5*time.Millisecond, func() { done <- ran{b.IsSameThread()} })
				close(posted)
			}()
			<-posted
		}},
	}
	for _, p := range posters {
		t.Run(p.name, func(t *testing.T) {
			for round := 0; round < 20; round++ {
				done := make(chan ran, 2)
				var at time.Time
				slimHandOver(t, a, b, func() {
					at = time.Now()
					p.post(done)
				})
				select {
				case r := <-done:
					if !r.same {
						t.Fatalf("round %d: the post ran off b's loop", round)
					}
					if d := time.Since(at); d < p.delay {
						t.Fatalf("round %d: ran after %v, before its %v", round, d, p.delay)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("round %d: a post made during the hand-over turn never ran (its wake-up lost)", round)
				}
				waitParked(t, b)
				waitFlag(t, b)
				select {
				case <-done:
					t.Fatalf("round %d: the post ran twice", round)
				default:
				}
			}
			next := make(chan struct{})
			b.xPost(func(unsafe.Pointer, uint64) { close(next) }, nil, 0)
			select {
			case <-next:
			case <-time.After(10 * time.Second):
				t.Fatal("a post after the rounds never ran: b lost its wake-up")
			}
		})
	}
}

// The hand-over turn is counted as one iteration of b and nothing else:
// no wake-up, no task, no timer. The counters are read under b's word
// while it stays parked (TakeParked), so reading them wakes nothing.
// After the turn, the borrowing loop is b's loop no more.
func TestHandOverTurnMetrics(t *testing.T) {
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	b := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	attachFlows(b)
	read := func() Metrics {
		for {
			waitParked(t, b)
			if X.TakeParked(b) {
				m := b.LoopMetrics()
				X.GiveParked(b, false)
				return m
			}
		}
	}
	// Warm: b has run, and parked with its flag set.
	slimHandOver(t, a, b, func() {})
	waitParked(t, b)
	waitFlag(t, b)
	m0 := read()
	const turns = 20
	for i := 0; i < turns; i++ {
		slimHandOver(t, a, b, func() {})
		after := make(chan [2]bool, 1)
		a.xPost(func(unsafe.Pointer, uint64) {
			after <- [2]bool{b.IsSameThread(), b.IsLoopGoroutine()}
		}, nil, 0)
		if s := <-after; s[0] || s[1] {
			t.Fatalf("turn %d: after the hand-over turn a's loop is still b's (IsSameThread %v, IsLoopGoroutine %v)", i, s[0], s[1])
		}
	}
	waitParked(t, b)
	m1 := read()
	if d := m1.Iterations - m0.Iterations; d != turns {
		t.Errorf("Iterations grew by %d over %d hand-over turns, want %d", d, turns, turns)
	}
	if d := m1.Wakeups - m0.Wakeups; d != 0 {
		t.Errorf("b woke %d times for %d hand-overs, want 0", d, turns)
	}
	if m1.TasksRun != m0.TasksRun || m1.TimersFired != m0.TimersFired {
		t.Errorf("TasksRun %d -> %d, TimersFired %d -> %d: a hand-over turn runs neither", m0.TasksRun, m1.TasksRun, m0.TimersFired, m1.TimersFired)
	}
}

// Close called while the handed-over flow runs: the flow returns after
// Close has begun, a second flow it readies runs once (the turn ends at
// Close, the shutdown ends the rest), Close returns and Run returns nil.
func TestCloseDuringHandOverTurn(t *testing.T) {
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	for round := 0; round < 10; round++ {
		b, err := New(Options{CPU: -1, Spin: NoSpin})
		if err != nil {
			t.Fatal(err)
		}
		runErr := make(chan error, 1)
		go func() { runErr <- b.Run() }()
		fx := attachFlows(b)
		var second atomic.Int32
		closed := make(chan error, 1)
		slimHandOver(t, a, b, func() {
			go func() { closed <- b.Close() }()
			for !b.Closed() {
				runtime.Gosched()
			}
			fx.ready(func() { second.Add(1) })
		})
		select {
		case err := <-closed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Close during a hand-over turn never returned", round)
		}
		if err := <-runErr; err != nil {
			t.Fatalf("round %d: Run = %v", round, err)
		}
		if n := second.Load(); n != 1 {
			t.Fatalf("round %d: the flow readied during the closing turn ran %d times, want 1", round, n)
		}
	}
}

// Chains of hand-overs on unlocked loops (the p99 yield before a sleep)
// and on one P: the token of TestHandOverTurnManyReactors goes round
// without loss, each hop on its own reactor's word.
func TestHandOverChainUnlockedOneP(t *testing.T) {
	for _, c := range []struct {
		name     string
		unlocked bool
		procs    int
	}{{"unlocked", true, 0}, {"one P", false, 1}, {"unlocked one P", true, 1}} {
		t.Run(c.name, func(t *testing.T) {
			if c.procs != 0 {
				old := runtime.GOMAXPROCS(c.procs)
				t.Cleanup(func() { runtime.GOMAXPROCS(old) })
			}
			const n, hops = 4, 2000
			rs := make([]*Reactor, n)
			fxs := make([]*flowExt, n)
			for i := range rs {
				rs[i] = startLoop(t, Options{CPU: -1, Spin: NoSpin, Unlocked: c.unlocked})
				fxs[i] = attachFlows(rs[i])
			}
			var bad atomic.Int32
			slim := passToken(t, rs, fxs, hops, func(i int) {
				if !rs[i].IsSameThread() || !rs[i].IsLoopGoroutine() {
					bad.Add(1)
				}
			})
			if bad.Load() != 0 {
				t.Fatalf("%d hops ran off their reactor's word", bad.Load())
			}
			t.Logf("%d of %d hops in a hand-over turn", slim, hops)
		})
	}
}

// I/O that becomes ready while b's word is borrowed for a hand-over: a
// readable pipe written just before the borrow (b's loop may be leaving
// epoll_wait as a's loop takes its word) or during the flow, and a
// peer's shutdown (InterestHangup, edge-triggered) during the flow. The
// loop, finding a turn ran in its place, drops its batch (unpark); each
// readiness must still reach its callback once, on b's loop.
func TestIODuringHandOverTurn(t *testing.T) {
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	b := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	fx := attachFlows(b)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	defer unix.Close(p[0])
	got := make(chan bool, 4)
	watched := make(chan error, 1)
	onLoop(b, func() {
		watched <- b.xWatch(p[0], InterestRead, func(unsafe.Pointer, int, Event) {
			var buf [1]byte
			if n, _ := unix.Read(p[0], buf[:]); n == 1 {
				got <- b.IsSameThread()
			}
		}, nil)
	})
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	write := func() {
		if _, err := unix.Write(p[1], []byte{1}); err != nil {
			t.Error(err)
		}
	}
	for _, when := range []string{"before the borrow", "during the flow"} {
		t.Run(when, func(t *testing.T) {
			for round := 0; round < 50; round++ {
				waitParked(t, b)
				waitFlag(t, b)
				ran := make(chan struct{}, 1)
				took := make(chan bool, 1)
				a.xPost(func(unsafe.Pointer, uint64) {
					if when == "before the borrow" {
						write()
					}
					if !X.TakeParked(b) {
						took <- false
						return
					}
					fx.ready(func() {
						if when == "during the flow" {
							write()
						}
						ran <- struct{}{}
					})
					X.GiveParked(b, true)
					took <- true
				}, nil, 0)
				handed := <-took
				if !handed && when == "during the flow" {
					continue
				}
				if handed {
					select {
					case <-ran:
					case <-time.After(10 * time.Second):
						t.Fatalf("round %d: the handed-over flow never ran", round)
					}
				}
				select {
				case same := <-got:
					if !same {
						t.Fatalf("round %d: the read callback ran off b's loop", round)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("round %d: the pipe became readable %s and its callback never ran", round, when)
				}
			}
		})
	}

	t.Run("hang-up during the flow", func(t *testing.T) {
		for round := 0; round < 20; round++ {
			s, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			hup := make(chan struct{}, 1)
			onLoop(b, func() {
				watched <- b.xWatch(s[0], InterestHangup, func(unsafe.Pointer, int, Event) {
					_ = b.Unwatch(s[0])
					hup <- struct{}{}
				}, nil)
			})
			if err := <-watched; err != nil {
				t.Fatal(err)
			}
			slimHandOver(t, a, b, func() { _ = unix.Shutdown(s[1], unix.SHUT_WR) })
			select {
			case <-hup:
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: a peer's shutdown during the hand-over turn never reached its callback", round)
			}
			_ = unix.Close(s[0])
			_ = unix.Close(s[1])
		}
	})
}
