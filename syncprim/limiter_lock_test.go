package syncprim

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A flow inside a Limiter's section (entered at once, through its Lock)
// passes a nested Sync on the same Limiter: with Concurrent 2 the nested
// entry must not take the second slot, with Concurrent 1 it must not
// queue behind itself.
func TestLimiterReentrant(t *testing.T) {
	for _, conc := range []int{1, 2} {
		r := reactor.NewManual()
		l := NewLimiter(r, LimiterOptions{Concurrent: conc, MaxQueue: 4, Rate: 100, Burst: 4})
		g := newGate()
		root := engine.New(r)
		root.Sync(l, func(as *engine.Steps) {
			as.Sync(l, g.section("inner"), nil)
		})
		p := root.Promise()
		r.RunUntilIdle()
		wantLog(t, g.log, "enter inner")
		// A second flow: with a free slot it enters beside the first.
		start(r, l, g.section("other"))
		r.RunUntilIdle()
		if conc == 2 {
			wantLog(t, g.log, "enter inner", "enter other")
		} else {
			wantLog(t, g.log, "enter inner")
		}
		g.open(t, "inner")
		r.RunUntilIdle()
		if _, err := p.Wait(); err != nil {
			t.Fatalf("concurrent %d: %v", conc, err)
		}
		wantLog(t, g.log, "enter inner", "enter other")
		g.open(t, "other")
		r.RunUntilIdle()
		if c, _ := l.Stats(); c.Holders != 0 || c.Queued != 0 {
			t.Fatalf("concurrent %d: left %+v", conc, c)
		}
	}
}

// A flow that finds a concurrency slot but no rate budget waits for the
// next period holding one slot (taken once, not twice: the uncontended
// try gives back the slot it took before the slow path queues).
func TestLimiterRateWaitHoldsOneSlot(t *testing.T) {
	r := reactor.NewManual()
	l := NewLimiter(r, LimiterOptions{Concurrent: 2, MaxQueue: 2, Rate: 1, Period: time.Second, Burst: 2})
	g := newGate()
	start(r, l, g.section("a"))
	start(r, l, g.section("b"))
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a")
	if c, rt := l.Stats(); c.Holders != 2 || rt.Queued != 1 {
		t.Fatalf("concurrency %+v, rate %+v", c, rt)
	}
	r.Advance(time.Second)
	wantLog(t, g.log, "enter a", "enter b")
	g.open(t, "a")
	g.open(t, "b")
	r.RunUntilIdle()
	if c, _ := l.Stats(); c.Holders != 0 {
		t.Fatalf("left %+v", c)
	}
}
