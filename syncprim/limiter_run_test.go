package syncprim

import (
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// TryEnterRun lets in as many sections as the period's budget allows, with
// one concurrency slot for the run; the rest are the caller's to Sync.
func TestLimiterRunTakesOneSlotAndItsEntries(t *testing.T) {
	tests := []struct {
		name      string
		rate, n   int
		want      int
		wantSpent int // rate entries spent after the run
	}{
		{"budget for all", 10, 4, 4, 4},
		{"budget for some", 3, 5, 3, 3},
		{"budget exactly", 5, 5, 5, 5},
		{"none asked", 5, 0, 0, 0},
		{"negative", 5, -1, 0, 0},
	}
	for _, tc := range tests {
		r := reactor.NewManual()
		l := NewLimiter(r, LimiterOptions{Concurrent: 2, Rate: tc.rate, Period: time.Second})
		k := l.TryEnterRun(tc.n)
		if k != tc.want {
			t.Fatalf("%s: TryEnterRun(%d) = %d, want %d", tc.name, tc.n, k, tc.want)
		}
		c, rt := l.Stats()
		wantHolders := 0
		if k > 0 {
			wantHolders = 1
		}
		if c.Holders != wantHolders || rt.Holders != tc.wantSpent {
			t.Fatalf("%s: concurrency %+v, rate %+v", tc.name, c, rt)
		}
		if k > 0 {
			l.LeaveRun()
		}
		if c, _ := l.Stats(); c.Holders != 0 {
			t.Fatalf("%s: after LeaveRun %+v", tc.name, c)
		}
	}
}

// With the period's budget spent, or every slot held, a run is let in for
// nothing and takes nothing; a later period's budget lets it in again.
func TestLimiterRunRefusedTakesNothing(t *testing.T) {
	r := reactor.NewManual()
	l := NewLimiter(r, LimiterOptions{Concurrent: 1, Rate: 2, Period: time.Second})
	if k := l.TryEnterRun(2); k != 2 {
		t.Fatalf("first run: %d", k)
	}
	if k := l.TryEnterRun(1); k != 0 { // the only slot is the first run's
		t.Fatalf("second run beside the first: %d", k)
	}
	l.LeaveRun()
	if k := l.TryEnterRun(1); k != 0 { // the slot is free, the budget spent
		t.Fatalf("run past the rate: %d", k)
	}
	if c, rt := l.Stats(); c.Holders != 0 || rt.Holders != 2 {
		t.Fatalf("refused run took something: concurrency %+v, rate %+v", c, rt)
	}
	r.Advance(time.Second)
	if k := l.TryEnterRun(3); k != 2 {
		t.Fatalf("run in the next period: %d", k)
	}
	l.LeaveRun()
}

// A flow that Syncs while a run holds the only slot queues behind it, and
// enters when the run leaves; a run that finds a flow queued is refused,
// so it never overtakes a waiter.
func TestLimiterRunQueuesOthersBehindIt(t *testing.T) {
	r := reactor.NewManual()
	l := NewLimiter(r, LimiterOptions{Concurrent: 1, MaxQueue: 2, Rate: 100, Period: time.Second})
	if k := l.TryEnterRun(3); k != 3 {
		t.Fatalf("run: %d", k)
	}
	g := newGate()
	start(r, l, g.section("a"))
	r.RunUntilIdle()
	wantLog(t, g.log)
	if c, _ := l.Stats(); c.Queued != 1 {
		t.Fatalf("flow behind the run: %+v", c)
	}
	l.LeaveRun()
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a")
	// a holds the slot: a run is refused; b queues, and a run is still
	// refused once a leaves (the slot goes to b, not to the run).
	if k := l.TryEnterRun(1); k != 0 {
		t.Fatalf("run beside a holder: %d", k)
	}
	start(r, l, g.section("b"))
	r.RunUntilIdle()
	g.open(t, "a")
	if k := l.TryEnterRun(1); k != 0 {
		t.Fatalf("run ahead of a waiter: %d", k)
	}
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a", "enter b")
	g.open(t, "b")
	r.RunUntilIdle()
	if c, rt := l.Stats(); c.Holders != 0 || c.Queued != 0 || rt.Holders != 5 {
		t.Fatalf("left: concurrency %+v, rate %+v", c, rt)
	}
}

// A run's entries count against the period as the sections' own would: a
// flow that comes after a run that spent the budget waits for the next
// period (Burst) or is refused (no Burst).
func TestLimiterRunSpendsTheRate(t *testing.T) {
	for _, burst := range []int{0, 1} {
		r := reactor.NewManual()
		l := NewLimiter(r, LimiterOptions{Concurrent: 4, Rate: 3, Period: time.Second, Burst: burst})
		if k := l.TryEnterRun(5); k != 3 {
			t.Fatalf("burst %d: run: %d", burst, k)
		}
		g := newGate()
		var code string
		_, p := start(r, l, g.section("a"), func(as *engine.Steps, c string) { code = c })
		r.RunUntilIdle()
		l.LeaveRun()
		if burst == 0 {
			if code != engine.DefenseRejected || !done(p) {
				t.Fatalf("burst 0: flow after a run that spent the rate: %q", code)
			}
			continue
		}
		wantLog(t, g.log)
		r.Advance(time.Second)
		wantLog(t, g.log, "enter a")
		g.open(t, "a")
		r.RunUntilIdle()
		if _, err := p.Wait(); err != nil {
			t.Fatalf("burst 1: %v", err)
		}
	}
}

// The run's try and leave allocate nothing.
func TestLimiterRunAllocatesNothing(t *testing.T) {
	r := reactor.NewManual()
	l := NewLimiter(r, LimiterOptions{Concurrent: 1, Rate: 1 << 30, Period: time.Hour})
	if a := testing.AllocsPerRun(1000, func() {
		if l.TryEnterRun(16) == 16 {
			l.LeaveRun()
		}
	}); a != 0 {
		t.Fatalf("%v allocations per run", a)
	}
}

// A LeaveRun with no run to end panics, naming the mistake, and leaves the
// Limiter as it was.
func TestLimiterLeaveRunWithoutRunPanics(t *testing.T) {
	r := reactor.NewManual()
	l := NewLimiter(r, LimiterOptions{Concurrent: 2, Rate: 10})
	func() {
		defer func() {
			if v, _ := recover().(string); !strings.Contains(v, "LeaveRun") {
				t.Fatalf("LeaveRun with no run: recovered %q, want a panic naming LeaveRun", v)
			}
		}()
		l.LeaveRun()
	}()
	if c, _ := l.Stats(); c.Holders != 0 || c.Queued != 0 {
		t.Fatalf("after the mistake: %+v", c)
	}
	if k := l.TryEnterRun(2); k != 2 {
		t.Fatalf("run after the mistake: %d", k)
	}
	l.LeaveRun()
}
