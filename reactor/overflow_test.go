package reactor_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Loop A posts 0..n-1 to B's tiny ring while B's loop is busy: some go to
// overflow, later ones into the ring. Check per-producer order.
func TestOverflowKeepsEachProducersOrderFromALoop(t *testing.T) {
	a, _ := reactortest.StartRun(t, reactor.Options{CPU: -1})
	b, _ := reactortest.StartRun(t, reactor.Options{CPU: -1, RingSize: 4})
	defer a.Close()
	defer b.Close()
	const n = 2000
	var got []int
	done := make(chan struct{})
	block := make(chan struct{})
	blocked := make(chan struct{})
	b.Immediate(func() { close(blocked); <-block })
	<-blocked // B's loop is busy
	a.Immediate(func() {
		for i := 0; i < n; i++ {
			i := i
			if i == 10 {
				close(block) // let B drain while A keeps posting
			}
			b.Immediate(func() {
				got = append(got, i)
				if len(got) == n {
					close(done)
				}
			})
			if i%50 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("timeout")
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("order broken at %d: got %d (%v...)", i, v, got[max(0, i-3):min(len(got), i+5)])
		}
	}
}

// Tasks A's loop queued in B's overflow list before B closes are accepted
// (Post returned true) but never run.
func TestOverflowTasksAcceptedBeforeCloseRun(t *testing.T) {
	a, _ := reactortest.StartRun(t, reactor.Options{CPU: -1})
	b, _ := reactortest.StartRun(t, reactor.Options{CPU: -1, RingSize: 4})
	defer a.Close()
	block := make(chan struct{})
	blocked := make(chan struct{})
	b.Immediate(func() { b.Immediate(func() { close(blocked); <-block }) }) // on B's loop: a wheel timer, fired after the overflow drain
	<-blocked
	var accepted, ran atomic.Int64
	posted := make(chan struct{})
	a.Immediate(func() {
		for i := 0; i < 100; i++ {
			if reactor.X.Post(b, func(unsafe.Pointer, uint64) { ran.Add(1) }, nil, 0) {
				accepted.Add(1)
			}
		}
		close(posted)
	})
	<-posted
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	for !b.Closed() { // Close has begun: later submissions fail
		runtime.Gosched()
	}
	close(block)
	<-closed
	if accepted.Load() != ran.Load() {
		t.Fatalf("accepted %d, ran %d", accepted.Load(), ran.Load())
	}
}

// Same, through the engine: a root on B executed from A's loop while B's
// ring is full, then B closes: the Promise never resolves.
func TestOverflowExecuteAcceptedBeforeCloseEnds(t *testing.T) {
	a, _ := reactortest.StartRun(t, reactor.Options{CPU: -1})
	b, _ := reactortest.StartRun(t, reactor.Options{CPU: -1, RingSize: 4})
	defer a.Close()
	block := make(chan struct{})
	blocked := make(chan struct{})
	b.Immediate(func() { b.Immediate(func() { close(blocked); <-block }) })
	<-blocked
	for i := 0; i < 8; i++ {
		b.Immediate(func() {}) // fill the ring (may block once full: do 4)
		if i == 3 {
			break
		}
	}
	var p *engine.Promise
	posted := make(chan struct{})
	a.Immediate(func() {
		root := engine.New(b)
		root.Add(func(as *engine.Steps) {})
		p = root.Promise()
		close(posted)
	})
	<-posted
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	for !b.Closed() { // Close has begun: later submissions fail
		runtime.Gosched()
	}
	close(block)
	<-closed
	select {
	case <-p.Done():
		if _, err := p.Wait(); err == nil {
			t.Fatal("flow on a closed reactor succeeded")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Promise never resolved after Close")
	}
}
