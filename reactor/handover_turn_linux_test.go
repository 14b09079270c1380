//go:build linux

package reactor

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// flowExt stands in for the engine's attachment in the hand-over turn's
// tests (handOverTurn): a queue of "flows" (funcs) that only the holder of
// the reactor's word touches, run by RunReady, with the reactor's own
// pending flag (as the engine keeps it). RunReady runs the flows queued
// when it starts and reports whether more were queued meanwhile, as the
// engine's batch does; Close runs what is left, as the engine ends its
// flows at shutdown.
type flowExt struct {
	r       *Reactor
	q       []func()
	pending *bool
}

var flowExtKey = xNewExtKey("handover test flows")

// attachFlows gives r a flowExt (once; safe from any goroutine).
func attachFlows(r *Reactor) *flowExt {
	return r.xExtOrInit(flowExtKey, func() Ext {
		f := &flowExt{r: r, pending: r.xPendingFlag()}
		return Ext{Value: f, Runner: f, Pending: f.pending, Close: f.runAll}
	}).(*flowExt)
}

// ready queues fn as a flow made ready. The caller holds r's word.
func (f *flowExt) ready(fn func()) {
	f.q = append(f.q, fn)
	*f.pending = true
}

func (f *flowExt) RunReady() bool {
	n := len(f.q)
	for i := 0; i < n; i++ {
		fn := f.q[i]
		f.q[i] = nil
		fn()
	}
	f.q = append(f.q[:0], f.q[n:]...)
	*f.pending = len(f.q) != 0
	return *f.pending
}

func (f *flowExt) runAll() {
	for len(f.q) != 0 {
		f.RunReady()
	}
}

// handOverFlow has a's loop borrow parked b's word, make fn a ready flow
// of b's (the engine's External.finish on a parked reactor: a Mutex
// handed to a flow there) and give the word back, so that a's loop owes
// b a kept turn. It reports false when b was not parked (nothing to
// check this round).
func handOverFlow(t *testing.T, a, b *Reactor, fn func()) bool {
	t.Helper()
	fx := attachFlows(b)
	waitParked(t, b)
	waitFlag(t, b)
	took := make(chan bool, 1)
	a.xPost(func(unsafe.Pointer, uint64) {
		if !X.TakeParked(b) {
			took <- false
			return
		}
		fx.ready(fn)
		X.GiveParked(b, true)
		took <- true
	}, nil, 0)
	return <-took
}

// inHandOverTurn reports whether the caller runs inside handOverTurn's
// own RunReady (not the full turn's, borrowedTurn's).
func inHandOverTurn() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		switch {
		case strings.HasSuffix(f.Function, ".borrowedTurn"), strings.HasSuffix(f.Function, ".iterate"):
			return false
		case strings.HasSuffix(f.Function, ".handOverTurn"):
			return true
		}
		if !more {
			return false
		}
	}
}

// A flow handed to a parked reactor runs in the hand-over turn (its
// engine's RunReady, without the full turn's iteration) on the borrowing
// loop's goroutine, as the reactor's loop: IsSameThread and
// IsLoopGoroutine true for it, false for the other loop; the parked loop
// does not wake, and its flag stays
// set, so the next post still wakes it.
func TestHandOverTurnRunsTheFlowAsTheLoop(t *testing.T) {
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	b := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	type seen struct {
		slim, same, loopG, aSame bool
		g                        uintptr
	}
	checked := 0
	for round := 0; round < 50; round++ {
		waitParked(t, b)
		wakeups := parkedWakeups(t, b)
		got := make(chan seen, 1)
		if !handOverFlow(t, a, b, func() {
			got <- seen{inHandOverTurn(), b.IsSameThread(), b.IsLoopGoroutine(), a.IsSameThread(), b.loopG.Load()}
		}) {
			continue
		}
		var s seen
		select {
		case s = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the handed-over flow never ran", round)
		}
		if !s.slim || !s.same || !s.loopG || s.g == parkedG || s.g == 0 {
			t.Fatalf("round %d: in the hand-over turn %v, IsSameThread %v, IsLoopGoroutine %v, word %#x; want the hand-over turn, true, true, a goroutine", round, s.slim, s.same, s.loopG, s.g)
		}
		if !s.aSame {
			t.Fatalf("round %d: the flow did not run on the borrowing loop's goroutine", round)
		}
		if w := parkedWakeups(t, b); w != wakeups {
			t.Fatalf("round %d: the parked loop woke %d times for a hand-over", round, w-wakeups)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no round found b parked")
	}
	waitParked(t, b)
	waitFlag(t, b)
	postRunsOnParked(t, b, "hand-overs")
}

// What a handed-over flow leaves goes on as after a full turn, each
// alone (the flow's turn then has nothing else that would wake the
// loop): a timer it arms fires on time, a descriptor it watches wakes the
// loop when it becomes readable, a local post runs, a flow it readies
// runs, all of them as the loop, and the loop parks again afterwards. A
// reactor with a timer pending takes the full turn.
func TestHandOverTurnFlowArmsTimersAndWatches(t *testing.T) {
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	b := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	fx := attachFlows(b)
	type seen struct {
		slim, same bool
		at         time.Time
	}
	cases := []struct {
		name string
		// leave makes the flow leave one thing behind, which sends on
		// done when it runs; wrote is called once the flow has run.
		leave func(t *testing.T, done chan<- seen)
		wrote func(t *testing.T)
		delay time.Duration
	}{
		{name: "timer", delay: 20 * time.Millisecond, leave: func(t *testing.T, done chan<- seen) {
			b.xAfter(20*time.Millisecond, func(unsafe.Pointer, uint64) { done <- seen{same: b.IsSameThread(), at: time.Now()} }, nil, 0)
		}},
		{name: "local post", leave: func(t *testing.T, done chan<- seen) {
			b.postLocal(func(unsafe.Pointer, uint64) { done <- seen{same: b.IsSameThread(), at: time.Now()} }, nil, 0)
		}},
		{name: "flow", leave: func(t *testing.T, done chan<- seen) {
			fx.ready(func() { done <- seen{same: b.IsSameThread(), at: time.Now()} })
		}},
		{name: "watch", leave: nil}, // set below: it needs its pipe
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	cases[3].leave = func(t *testing.T, done chan<- seen) {
		err := b.xWatch(p[0], InterestRead, func(unsafe.Pointer, int, Event) {
			var buf [8]byte
			_, _ = unix.Read(p[0], buf[:])
			_ = b.Unwatch(p[0])
			_ = unix.Close(p[0])
			done <- seen{same: b.IsSameThread(), at: time.Now()}
		}, nil)
		if err != nil {
			t.Error(err)
		}
	}
	cases[3].wrote = func(t *testing.T) {
		waitParked(t, b) // the watch is added before the loop sleeps on it
		if _, err := unix.Write(p[1], []byte{1}); err != nil {
			t.Error(err)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ran := make(chan seen, 1)
			done := make(chan seen, 1)
			for !handOverFlow(t, a, b, func() {
				c.leave(t, done)
				ran <- seen{slim: inHandOverTurn(), same: b.IsSameThread(), at: time.Now()}
			}) {
			}
			s := <-ran
			if !s.slim || !s.same {
				t.Fatalf("the flow ran in the hand-over turn %v, as the loop %v; want both", s.slim, s.same)
			}
			if c.wrote != nil {
				c.wrote(t)
			}
			select {
			case d := <-done:
				if !d.same {
					t.Fatal("it ran off the loop")
				}
				if d.at.Sub(s.at) < c.delay {
					t.Fatalf("it ran after %v, before its %v", d.at.Sub(s.at), c.delay)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("what the handed-over flow left never ran")
			}
			waitParked(t, b)
		})
	}

	// A timer pending on b: the kept turn is the full one (it may fire
	// timers due meanwhile), and the timer still fires. A timer never
	// fires early, so a turn that began before armed+delay had it
	// pending; under load the hand-over can come later than that, and
	// then the try says nothing and is made again.
	const delay = 30 * time.Millisecond
	for try := 0; ; try++ {
		waitParked(t, b)
		type turn struct {
			full bool
			at   time.Time
		}
		got := make(chan turn, 1)
		timerFired := make(chan struct{})
		armed := time.Now()
		onLoop(b, func() {
			b.xAfter(delay, func(unsafe.Pointer, uint64) { close(timerFired) }, nil, 0)
		})
		for !handOverFlow(t, a, b, func() { got <- turn{!inHandOverTurn(), time.Now()} }) {
		}
		tr := <-got
		select {
		case <-timerFired:
		case <-time.After(10 * time.Second):
			t.Fatal("the pending timer never fired")
		}
		if tr.at.Sub(armed) < delay {
			if !tr.full {
				t.Fatal("a reactor with a timer pending took the hand-over turn, not the full one")
			}
			break
		}
		if try == 50 {
			t.Skipf("in 50 tries no hand-over came within %v of arming the timer (a loaded machine)", delay)
		}
	}
}

// Hand-overs racing Close: each flow made ready runs exactly once (in a
// hand-over turn, a full turn, or the shutdown's end of the flows), never
// two of a reactor's at once, and Run returns nil.
func TestHandOverTurnRacingClose(t *testing.T) {
	if forcePolling {
		t.Skip("the Polling fallback never parks: nothing to hand off")
	}
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	var handed atomic.Int64
	racingClose(t, Options{CPU: -1, Spin: NoSpin}, func(r *Reactor, task func(unsafe.Pointer, uint64)) bool {
		fx := attachFlows(r)
		res := make(chan bool, 1)
		if !a.xPost(func(unsafe.Pointer, uint64) {
			if !X.TakeParked(r) {
				res <- false
				return
			}
			fx.ready(func() { task(nil, 0) })
			X.GiveParked(r, true)
			handed.Add(1)
			res <- true
		}, nil, 0) {
			return false
		}
		return <-res
	})
	if handed.Load() == 0 {
		t.Fatal("no hand-over happened: the test checked nothing")
	}
}

// A token handed around a ring of reactors, each hop a flow of the next
// reactor made ready by the previous one's flow (under the next one's
// word when it is parked, through its ring otherwise): every hop runs
// once, as its reactor's loop, one flow of a reactor at a time, and the
// chains of owed turns end (maxOwedPerPay) without losing a hop.
func TestHandOverTurnManyReactors(t *testing.T) {
	const n, hops = 8, 4000
	rs := make([]*Reactor, n)
	fxs := make([]*flowExt, n)
	for i := range rs {
		rs[i] = startLoop(t, Options{CPU: -1, Spin: NoSpin})
		fxs[i] = attachFlows(rs[i])
	}
	var inside [n]atomic.Int32
	var bad atomic.Int32
	slimHops := passToken(t, rs, fxs, hops, func(i int) {
		if inside[i].Add(1) != 1 || !rs[i].IsSameThread() {
			bad.Add(1)
		}
		inside[i].Add(-1)
	})
	if bad.Load() != 0 {
		t.Fatalf("%d hops ran off their loop or beside another flow of theirs", bad.Load())
	}
	t.Logf("%d of %d hops ran in a hand-over turn", slimHops, hops)
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Close() }()
	}
	wg.Wait()
}

// passToken hands a token hops times round the ring rs (fxs[i] the flows
// of rs[i]): each hop is a flow of its reactor that runs visit(i) and then
// makes the next reactor's hop ready, under that reactor's word when it is
// parked, through its ring otherwise. It fails the test if the token is
// lost, and returns how many hops ran in a hand-over turn.
func passToken(t *testing.T, rs []*Reactor, fxs []*flowExt, hops int, visit func(i int)) (slim int64) {
	t.Helper()
	n := len(rs)
	var slimHops atomic.Int64
	done := make(chan struct{})
	var hop func(i, k int)
	hop = func(i, k int) {
		visit(i)
		if inHandOverTurn() {
			slimHops.Add(1)
		}
		if k == hops {
			close(done)
			return
		}
		j := (i + 1) % n
		next := func() { hop(j, k+1) }
		if X.TakeParked(rs[j]) {
			fxs[j].ready(next)
			X.GiveParked(rs[j], true)
			return
		}
		rs[j].xPost(func(unsafe.Pointer, uint64) { fxs[j].ready(next) }, nil, 0)
	}
	rs[0].xPost(func(unsafe.Pointer, uint64) { fxs[0].ready(func() { hop(0, 1) }) }, nil, 0)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the token was lost")
	}
	return slimHops.Load()
}
