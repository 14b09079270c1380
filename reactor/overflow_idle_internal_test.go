package reactor

import "testing"

// The idle look (iterate's head, RunUntilIdle's nested and outermost
// loops) reads the ring alone, not the overflow flag: a task waiting in the
// overflow list while the ring is empty must still run, which holds only
// because pushOverflow diverts the ring (overflowList). The state is the
// one a producer leaves when the loop drained the ring between its failed
// push and its append to the list; here the append is made directly.
func TestIdleLookSeesOverflowWithRingEmpty(t *testing.T) {
	cases := []struct {
		name  string
		drive func(r *Reactor, post func())
	}{
		{"RunUntilIdle outermost", func(r *Reactor, post func()) { post(); r.RunUntilIdle() }},
		{"RunUntilIdle nested", func(r *Reactor, post func()) {
			r.Immediate(func() { post(); r.RunUntilIdle() })
			r.RunUntilIdle()
		}},
		{"Iterate", func(r *Reactor, post func()) { post(); r.Iterate() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewManual()
			defer r.Close()
			ran := false
			post := func() {
				if !r.inbox.Idle() {
					t.Fatal("the ring is not idle before the overflow push")
				}
				if _, ok := r.pushOverflow(task{fn: func() { ran = true }, kind: taskImmediate}); !ok {
					t.Fatal("pushOverflow refused on an open reactor")
				}
				if r.inbox.Idle() {
					t.Fatal("the ring reads idle with a task in the overflow list")
				}
			}
			c.drive(r, post)
			if !ran {
				t.Fatal("the overflowed task did not run")
			}
			if !r.inbox.Idle() || r.overflow.active.Load() {
				t.Fatalf("after the drain: ring idle %v, overflow active %v; want true, false", r.inbox.Idle(), r.overflow.active.Load())
			}
		})
	}
}
