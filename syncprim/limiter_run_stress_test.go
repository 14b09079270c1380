package syncprim

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
)

// LeaveRun against an enqueue, many times over, on two real reactors: a
// run holds the only slot, flows of both loops come to Sync (each finds
// the slot taken, locks the word and queues, or finds it free and enters)
// while the run's LeaveRun, on another goroutine, either takes its fast
// path (nobody queued yet: one CAS) or hands the slot to the first waiter.
// Every flow must end, and the Limiter be empty after each round: a fast
// path that let the slot go while a flow queued would strand that flow.
func TestStressLimiterLeaveRunRacesEnqueue(t *testing.T) {
	g := stressGroup(t)
	rounds := 2000
	if testing.Short() {
		rounds = 300
	}
	l := NewLimiter(g.Reactors()[1], LimiterOptions{
		Concurrent: 1, MaxQueue: Unlimited,
		Rate: 1 << 30, Period: time.Hour, Burst: Unlimited,
	})
	var hw highWater
	section := func(as *engine.Steps) {
		if k := hw.enter(); k > 1 {
			t.Errorf("%d inside a Limiter of Concurrent 1", k)
		}
		hw.leave()
	}
	const flows = 3
	var roots [flows]*engine.Steps
	var promises [flows]*engine.Promise
	emptyAtLeave := 0
	for round := range rounds {
		if k := l.TryEnterRun(1); k != 1 {
			t.Fatalf("round %d: TryEnterRun on an empty Limiter = %d, stats %s", round, k, statsOf(l))
		}
		for i := range roots {
			roots[i] = engine.New(g.Next())
			roots[i].Add(func(as *engine.Steps) { as.Sync(l, section, nil) })
		}
		// The leave runs on its own goroutine, released as the flows
		// start: it meets them before, during or after their enqueue.
		start, left := make(chan struct{}), make(chan bool)
		go func() {
			<-start
			c, _ := l.Stats()
			l.LeaveRun()
			left <- c.Queued == 0
		}()
		close(start)
		for i, root := range roots {
			promises[i] = root.Promise()
		}
		if <-left {
			emptyAtLeave++
		}
		deadline := time.After(30 * time.Second)
		for i, p := range promises {
			select {
			case <-p.Done():
			case <-deadline:
				t.Fatalf("round %d: flow %d still waiting 30s after LeaveRun (stranded): %s", round, i, statsOf(l))
			}
			if _, err := p.Wait(); err != nil {
				t.Fatalf("round %d: flow %d: %v", round, i, err)
			}
			roots[i].Release()
		}
		if c, _ := l.Stats(); c != (Stats{}) {
			t.Fatalf("round %d: concurrency after the flows: %+v, want zero", round, c)
		}
	}
	t.Logf("%d of %d rounds found nobody queued as LeaveRun began", emptyAtLeave, rounds)
}
