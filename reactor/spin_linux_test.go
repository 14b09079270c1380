//go:build linux

package reactor_test

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// pingPong is a message that two reactors pass back and forth.
type pingPong struct {
	a, b *reactor.Reactor
	left int
	done chan struct{}
}

func pingPongHop(p *pingPong, aux uint64) {
	if p.left--; p.left == 0 {
		close(p.done)
		return
	}
	to := p.a
	if aux == 0 {
		to = p.b
	}
	reactor.PostTo(to, pingPongHop, p, 1-aux)
}

// metricsOf reads r's metrics on its loop.
func metricsOf(t *testing.T, r *reactor.Reactor) reactor.Metrics {
	var m reactor.Metrics
	done := make(chan struct{})
	r.Immediate(func() { m = r.LoopMetrics(); close(done) })
	reactortest.Wait(t, done, "metrics")
	return m
}

// Two spinning reactors passing a message back and forth take each hop
// while spinning, inside a turn: neither goes to sleep, so none of the
// hops costs a wake-up, and every hop arrives. Spin is long (a second) so
// that only a thread descheduled for that long could make a loop sleep.
//
// 200 hops, not 2000: with both loops spinning on two shared cores under
// load, a hop waits for the receiving loop's thread to get a core, a few
// ms each (2000 hops took 2-14 s at load 20 under -race, and once
// outlasted the 15 s hang guard); the check is a ratio, so the count
// only sets how long the test runs.
//
// The loops are OwnThread, so that a hop to a loop that did go to sleep
// wakes it: otherwise the posting loop runs the parked one's turn itself
// (a hand-off, handoff_linux.go), which costs no wake-up either, and the
// check held with no spin at all (with NoSpin and OwnThread it fails:
// 135 wake-ups for 200 hops).
func TestSpinningLoopsHopWithoutWakeups(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		// Two loops spinning at once need two Ps: on one, each hop waits
		// for the spinner to be preempted (10 ms).
		t.Skip("needs GOMAXPROCS >= 2: both loops spin at once")
	}
	opts := reactor.Options{CPU: -1, Spin: time.Second, OwnThread: true}
	a, errA := reactortest.StartRun(t, opts)
	b, errB := reactortest.StartRun(t, opts)
	const hops = 200
	// Warm up: both loops have run a posted task, so each is spinning
	// (or about to) when the measured hops start.
	warm := &pingPong{a: a, b: b, left: 4, done: make(chan struct{})}
	reactor.PostTo(a, pingPongHop, warm, 0)
	reactortest.Wait(t, warm.done, "warm-up hops")
	w0 := metricsOf(t, a).Wakeups + metricsOf(t, b).Wakeups
	p := &pingPong{a: a, b: b, left: hops, done: make(chan struct{})}
	reactor.PostTo(a, pingPongHop, p, 0)
	reactortest.Wait(t, p.done, "hops")
	w1 := metricsOf(t, a).Wakeups + metricsOf(t, b).Wakeups
	// The metrics reads themselves may find a loop asleep: a few wake-ups,
	// never one per hop.
	if d := w1 - w0; d > hops/10 {
		t.Errorf("%d wake-ups for %d hops between spinning loops", d, hops)
	}
	reactortest.CloseAndWait(t, a, errA)
	reactortest.CloseAndWait(t, b, errB)
}

// A spinning loop still fires its timers on time: the spin ends at the
// wheel's next deadline instead of running its whole length.
func TestSpinDoesNotDelayTimers(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1, Spin: time.Hour})
	fired := make(chan struct{})
	// Posted from here, so the loop ran a posted task and then spins.
	reactor.PostTo(r, func(*pingPong, uint64) {
		reactor.X.After(r, time.Millisecond, func(unsafe.Pointer, uint64) { close(fired) }, nil, 0)
	}, &pingPong{}, 0)
	reactortest.Wait(t, fired, "a timer on a loop spinning for an hour")
	// And Close does not wait for the spin to end either.
	reactortest.CloseAndWait(t, r, runErr)
}

// spinIO is the loop-owned state of TestSpinLooksAtIOBetweenSpins.
type spinIO struct {
	posts   int           // posted tasks run so far
	wroteAt int           // posts when the pipe was written
	waits   chan int      // posts run between a write and its read callback
	ran     chan struct{} // a posted task ran (the poster posts the next one)
}

// spinIOPost counts itself and tells the poster it ran; never blocks: one
// post at a time.
func spinIOPost(s *spinIO, _ uint64) {
	s.posts++
	s.ran <- struct{}{}
}

// A loop whose spins keep finding posted work still looks at its I/O:
// once a turn's spins add up to their bound (here the 2 ms Spin, each
// spin finding a post after at least 1 ms), the turn ends and epoll_wait
// reports the ready pipe. Without the bound the pipe waited for up to a
// whole turn's 64 spins; the count of posts run in between, not the
// time, is what is checked.
func TestSpinLooksAtIOBetweenSpins(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1, Spin: 2 * time.Millisecond})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	s := &spinIO{waits: make(chan int), ran: make(chan struct{}, 1)}
	watched := make(chan error, 1)
	r.Immediate(func() {
		watched <- reactor.WatchTo(r, p[0], reactor.InterestRead, func(s *spinIO, fd int, _ reactor.Event) {
			var buf [8]byte
			_, _ = unix.Read(fd, buf[:])
			s.waits <- s.posts - s.wroteAt
		}, s)
	})
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	posterDone := make(chan struct{})
	go func() {
		// One post at a time, each 1 ms after the last one ran: a spin
		// begun after that run finds the next one after at least 1 ms,
		// and the ring never holds two. (A post every millisecond whatever the
		// loop did let posts pile up in the ring of a loop thread
		// descheduled under load: 9 to 17 of them, run in one
		// iteration after one spin, in 3 of 15 tries at load 17.)
		defer close(posterDone)
		for {
			reactor.PostTo(r, spinIOPost, s, 0)
			select {
			case <-stop:
				return
			case <-s.ran:
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	const writes = 5
	for range writes {
		wrote := make(chan struct{})
		reactor.PostTo(r, func(s *spinIO, _ uint64) {
			s.wroteAt = s.posts
			_, _ = unix.Write(p[1], []byte{1})
			close(wrote)
		}, s, 0)
		reactortest.Wait(t, wrote, "the pipe write")
		select {
		case n := <-s.waits:
			// 2 ms of spins at ≥ 1 ms each, plus the spin under way
			// and slack: far below a turn's 64.
			if n > 8 {
				t.Errorf("ready I/O waited for %d posted tasks; want at most 8", n)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the pipe's read callback never ran")
		}
	}
	close(stop)
	<-posterDone
	reactortest.CloseAndWait(t, r, runErr)
}
