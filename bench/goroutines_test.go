package bench

import "testing"

// Tests of the goroutine peers: each computes what ours does, so the two
// columns of the table measure the same work.

func TestSimpleGoroutines(t *testing.T) {
	s := new(simplePeer)
	for range 100 {
		s.op()
	}
	if got := s.ran.Load(); got != 100 {
		t.Errorf("%d of 100 goroutines ran", got)
	}
}

func TestSequentialGoroutines(t *testing.T) {
	s := newPipelinePeer(func(v int64) int64 { return v + 1 })
	defer s.close()
	for _, n := range []int{1, 2, 7, SequentialSteps - 1, SequentialSteps} {
		if got := s.round(n); got != int64(n) {
			t.Errorf("%d stages gave %d, want %d", n, got, n)
		}
	}
}

func TestParallelGoroutines(t *testing.T) {
	p := newParallelPeer()
	for _, n := range []int{1, 3, ParallelFlows} {
		if err := p.batch(n); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParallelWaitLoopGoroutines(t *testing.T) {
	w := newWaitLoopPeer()
	w.round(1)
	w.round(ParallelFlows)
	if got, want := w.close(), int64(1+ParallelFlows); got != want {
		t.Errorf("%d iterations ran, want %d", got, want)
	}
}

func TestTimeoutGoroutines(t *testing.T) {
	p := newTimeoutPeer()
	defer p.close()
	for range 100 {
		if !p.op() {
			t.Fatal("the timer fired before the reply")
		}
	}
}
