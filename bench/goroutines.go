package bench

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// This file is the idiomatic Go peer of every scenario (impl=goroutines): a
// goroutine per flow, channels to hand work over, sync.WaitGroup to wait.
// Like ours, each scenario is a fixture that the benchmark and
// goroutines_test.go share; each warms up before b.ResetTimer (the runtime
// keeps dead goroutines for reuse) and checks its result.

// --- Simple ---

type simplePeer struct {
	wg  sync.WaitGroup
	ran atomic.Int64
}

// op starts a goroutine that does nothing but say it is done, and waits
// for it: go func(){ wg.Done() }() and wg.Wait.
func (s *simplePeer) op() {
	s.wg.Add(1)
	go func() {
		s.ran.Add(1)
		s.wg.Done()
	}()
	s.wg.Wait()
}

// SimpleGoroutines: a goroutine per op, waited for with a sync.WaitGroup.
// b.N counts goroutines.
func SimpleGoroutines(b *testing.B) {
	s := new(simplePeer)
	for range warmRounds {
		s.op()
	}
	s.ran.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.op()
	}
	b.StopTimer()
	if got := s.ran.Load(); got != int64(b.N) {
		fatalf(b, "SimpleGoroutines: %d of %d goroutines ran", got, b.N)
	}
}

// --- Sequential ---

// pipelinePeer is a pipeline of SequentialSteps goroutines: stage i
// receives a message on chans[i] and sends next(message) on chans[i+1],
// all unbuffered. Each step is one handoff from a goroutine to the next:
// the Go way of "a step that completes asynchronously and passes its
// result on".
type pipelinePeer[M any] struct {
	chans []chan M
}

func newPipelinePeer[M any](next func(M) M) *pipelinePeer[M] {
	s := &pipelinePeer[M]{chans: make([]chan M, SequentialSteps+1)}
	for i := range s.chans {
		s.chans[i] = make(chan M)
	}
	for i := range SequentialSteps {
		go func(in <-chan M, out chan<- M) {
			for m := range in {
				out <- next(m)
			}
			close(out)
		}(s.chans[i], s.chans[i+1])
	}
	return s
}

// round feeds the zero message into the pipeline n stages from its end (n
// ≤ SequentialSteps) and returns what comes out.
func (s *pipelinePeer[M]) round(n int) M {
	var zero M
	s.chans[SequentialSteps-n] <- zero
	return <-s.chans[SequentialSteps]
}

// close stops every stage.
func (s *pipelinePeer[M]) close() {
	close(s.chans[0])
	for range s.chans[SequentialSteps] {
	}
}

// benchPipeline is the body of a pipeline peer: b.N counts steps,
// b.N/SequentialSteps full passes and one shorter pass for the remainder,
// each checked by value (the number of stages it went through).
func benchPipeline[M any](b *testing.B, name string, next func(M) M, value func(M) int64) {
	s := newPipelinePeer(next)
	defer s.close()
	for range 16 {
		s.round(SequentialSteps)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, SequentialSteps)
		if got := value(s.round(n)); got != int64(n) {
			fatalf(b, "%s: %d stages gave %d, want %d", name, n, got, n)
		}
		left -= n
	}
	b.StopTimer()
	reportPer(b, "step")
}

// SequentialGoroutines: an int64 passed through a pipeline of goroutines
// over unbuffered channels, plus one per stage. b.N counts steps.
func SequentialGoroutines(b *testing.B) {
	benchPipeline(b, "SequentialGoroutines",
		func(v int64) int64 { return v + 1 },
		func(v int64) int64 { return v })
}

// --- Parallel ---

// parallelPeer starts a goroutine per flow, each blocking on its own
// channel (one slot, reused across batches) until the driver sends to it.
type parallelPeer struct {
	chans []chan int
	wg    sync.WaitGroup
	sum   atomic.Int64
}

func newParallelPeer() *parallelPeer {
	p := &parallelPeer{chans: make([]chan int, ParallelFlows)}
	for i := range p.chans {
		p.chans[i] = make(chan int, 1)
	}
	return p
}

// batch starts n goroutines (n ≤ ParallelFlows), then completes each by a
// send on its channel, then waits for all of them with the WaitGroup. It
// reports an error unless every goroutine received its value.
func (p *parallelPeer) batch(n int) error {
	p.sum.Store(0)
	p.wg.Add(n)
	for _, ch := range p.chans[:n] {
		go func() {
			p.sum.Add(int64(<-ch))
			p.wg.Done()
		}()
	}
	for _, ch := range p.chans[:n] {
		ch <- 1
	}
	p.wg.Wait()
	if got := p.sum.Load(); got != int64(n) {
		return fmt.Errorf("ParallelGoroutines: %d of %d flows completed", got, n)
	}
	return nil
}

// ParallelGoroutines: batches of ParallelFlows goroutines each waiting on
// its own channel, all released by the benchmark goroutine. b.N counts
// flows.
func ParallelGoroutines(b *testing.B) {
	p := newParallelPeer()
	for range 2 {
		if err := p.batch(ParallelFlows); err != nil {
			fatalf(b, "%v", err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, ParallelFlows)
		if err := p.batch(n); err != nil {
			fatalf(b, "%v", err)
		}
		left -= n
	}
	b.StopTimer()
	reportPer(b, "flow")
}

// --- ParallelWaitLoop ---

// waitLoopPeer is ParallelFlows goroutines, each looping on a receive from
// its own unbuffered channel; the driver sends to each in turn, so every
// send is one iteration of one goroutine's loop.
type waitLoopPeer struct {
	chans []chan struct{}
	wg    sync.WaitGroup
	iters atomic.Int64
}

func newWaitLoopPeer() *waitLoopPeer {
	w := &waitLoopPeer{chans: make([]chan struct{}, ParallelFlows)}
	w.wg.Add(len(w.chans))
	for i := range w.chans {
		ch := make(chan struct{})
		w.chans[i] = ch
		go func() {
			defer w.wg.Done()
			var n int64
			for range ch {
				n++
			}
			w.iters.Add(n)
		}()
	}
	return w
}

// round runs one iteration of each of the first n goroutines (n ≤
// ParallelFlows).
func (w *waitLoopPeer) round(n int) {
	for _, ch := range w.chans[:n] {
		ch <- struct{}{}
	}
}

// close stops every goroutine and returns how many iterations ran in all.
func (w *waitLoopPeer) close() int64 {
	for _, ch := range w.chans {
		close(ch)
	}
	w.wg.Wait()
	return w.iters.Load()
}

// ParallelWaitLoopGoroutines: ParallelFlows goroutines looping on a channel
// receive, the benchmark goroutine driving them. b.N counts iterations.
func ParallelWaitLoopGoroutines(b *testing.B) {
	w := newWaitLoopPeer()
	const warm = 2 * ParallelFlows
	w.round(ParallelFlows)
	w.round(ParallelFlows)
	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, ParallelFlows)
		w.round(n)
		left -= n
	}
	b.StopTimer()
	reportPer(b, "iter")
	if got, want := w.close(), int64(b.N+warm); got != want {
		fatalf(b, "ParallelWaitLoopGoroutines: %d iterations ran, want %d", got, want)
	}
}

// --- Timeout ---

// timeoutPeer bounds a handoff to a worker goroutine (request and reply
// over unbuffered channels) with time.AfterFunc, stopped when the reply
// comes: the Go way of putting a deadline on work another goroutine does.
type timeoutPeer struct {
	req, reply chan struct{}
	timedOut   atomic.Bool
	onTimeout  func()
}

func newTimeoutPeer() *timeoutPeer {
	t := &timeoutPeer{req: make(chan struct{}), reply: make(chan struct{})}
	t.onTimeout = func() { t.timedOut.Store(true) }
	go func() {
		for range t.req {
			t.reply <- struct{}{}
		}
	}()
	return t
}

// op reports whether the reply came before the timer fired.
func (t *timeoutPeer) op() bool {
	tm := time.AfterFunc(time.Second, t.onTimeout)
	t.req <- struct{}{}
	<-t.reply
	return tm.Stop()
}

func (t *timeoutPeer) close() { close(t.req) }

// TimeoutGoroutines: time.AfterFunc + Stop around a goroutine handoff.
// b.N counts operations.
func TimeoutGoroutines(b *testing.B) {
	t := newTimeoutPeer()
	defer t.close()
	for range warmRounds {
		t.op()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if !t.op() {
			fatalf(b, "TimeoutGoroutines: the timer fired before the reply")
		}
	}
	b.StopTimer()
	if t.timedOut.Load() {
		fatalf(b, "TimeoutGoroutines: a timeout fired")
	}
}
