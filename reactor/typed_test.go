package reactor

import (
	"testing"
	"time"
)

type counter struct {
	n   int
	aux uint64
}

func bump(c *counter, aux uint64) { c.n++; c.aux = aux }

func TestTypedEntryPoints(t *testing.T) {
	r := NewManual()
	c := &counter{}
	t.Run("PostTo", func(t *testing.T) {
		if !PostTo(r, bump, c, 7) {
			t.Fatal("PostTo on an open reactor reported false")
		}
		r.RunUntilIdle()
		if c.n != 1 || c.aux != 7 {
			t.Fatalf("callback saw n=%d aux=%d, want 1 and 7", c.n, c.aux)
		}
	})
	t.Run("AfterTo", func(t *testing.T) {
		var tm Timer
		r.Immediate(func() { tm = AfterTo(r, 5*time.Millisecond, bump, c, 9) })
		r.RunUntilIdle()
		if tm.IsZero() || c.n != 1 {
			t.Fatalf("timer %v fired early or was not made (n=%d)", tm, c.n)
		}
		r.Advance(5 * time.Millisecond)
		if c.n != 2 || c.aux != 9 {
			t.Fatalf("after the deadline n=%d aux=%d, want 2 and 9", c.n, c.aux)
		}
	})
	t.Run("AtShutdownTo and RemoveAtShutdownOf", func(t *testing.T) {
		r := NewManual()
		kept, dropped := &counter{}, &counter{}
		AtShutdownTo(r, bump, kept, 1)
		AtShutdownTo(r, bump, dropped, 2)
		RemoveAtShutdownOf(r, dropped)
		_ = r.Close()
		if kept.n != 1 || kept.aux != 1 || dropped.n != 0 {
			t.Fatalf("kept n=%d aux=%d, dropped n=%d: want 1, 1, 0", kept.n, kept.aux, dropped.n)
		}
	})
	t.Run("PostTo after Close", func(t *testing.T) {
		r := NewManual()
		_ = r.Close()
		if PostTo(r, bump, c, 0) {
			t.Fatal("PostTo on a closed reactor reported true")
		}
	})
}

func TestTypedEntryPointsAllocs(t *testing.T) {
	r := NewManual()
	c := &counter{}
	if n := testing.AllocsPerRun(1000, func() {
		PostTo(r, bump, c, 1)
		r.RunUntilIdle()
	}); n != 0 {
		t.Errorf("PostTo: %v allocations per call, want 0", n)
	}
	r.enter()
	defer r.leave()
	if n := testing.AllocsPerRun(1000, func() {
		r.Stop(AfterTo(r, time.Second, bump, c, 1))
	}); n != 0 {
		t.Errorf("AfterTo: %v allocations per call, want 0", n)
	}
}
