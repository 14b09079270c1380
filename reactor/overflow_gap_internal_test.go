package reactor

import (
	"reflect"
	"sync/atomic"
	"testing"
	"unsafe"
)

// ringGap holds a position of r's ring claimed and not yet published, as a
// producer descheduled between TryPushPos's CAS and its publishing store
// leaves it, and publishes it later. It reaches the ring's unexported words
// by reflection: no exported call can stop a push halfway.
type ringGap struct {
	pos  uint64
	seq  *atomic.Uint64
	val  *task
	open bool
}

func claimRingGap(t *testing.T, r *Reactor) *ringGap {
	t.Helper()
	q := reflect.ValueOf(&r.inbox).Elem()
	enqF, slotsF, maskF := q.FieldByName("enq"), q.FieldByName("slots"), q.FieldByName("mask")
	if !enqF.IsValid() || !slotsF.IsValid() || !maskF.IsValid() {
		t.Fatal("ring.MPSC's fields enq, slots, mask not found: update claimRingGap")
	}
	// Safety: the addresses are of fields of r.inbox, which r keeps alive
	// for the test; the types are the ring's own (atomic.Uint64, task).
	enq := (*atomic.Uint64)(unsafe.Pointer(enqF.UnsafeAddr()))
	pos := enq.Load()
	if pos>>62 != 0 || !enq.CompareAndSwap(pos, pos+1) {
		t.Fatal("the ring is closed, diverted or busy")
	}
	s := slotsF.Index(int(pos & maskF.Uint()))
	return &ringGap{
		pos:  pos,
		seq:  (*atomic.Uint64)(unsafe.Pointer(s.FieldByName("seq").UnsafeAddr())),
		val:  (*task)(unsafe.Pointer(s.FieldByName("val").UnsafeAddr())),
		open: true,
	}
}

// publish ends the gap as the stalled producer would: the value, then the
// sequence that hands it to the consumer.
func (g *ringGap) publish(tk task) {
	*g.val = tk
	g.seq.Store(g.pos + 1)
	g.open = false
}

// A producer X stalls between claiming ring position 0 and publishing it;
// producer P then posts p1 (ring position 1: the ring of two is full) and
// p2 (the overflow list). The drain must not run p2 before p1, which sits
// behind X's gap: each producer's order (package doc). Before the fix the
// drain's pop stopped at the gap and the list ran at once: p2, then
// later X's task and p1.
func TestOverflowDrainWaitsForAGapInTheRing(t *testing.T) {
	r := newReactor(Options{CPU: -1, RingSize: 2}, true)
	defer r.Close()
	var order []string
	rec := func(s string) func() { return func() { order = append(order, s) } }
	gap := claimRingGap(t, r)
	if _, ok := r.push(task{fn: rec("p1"), kind: taskImmediate}); !ok {
		t.Fatal("p1 refused")
	}
	if pos, ok := r.push(task{fn: rec("p2"), kind: taskImmediate}); !ok || pos&overflowBit == 0 {
		t.Fatalf("p2: pos %#x ok %v, want an overflow position", pos, ok)
	}
	for range 3 {
		r.Iterate() // the gap is open: nothing behind it may run, nor the list
	}
	if len(order) != 0 {
		t.Fatalf("ran %v with position %d claimed and not published; want nothing", order, gap.pos)
	}
	if !r.overflow.active.Load() || r.inbox.Idle() {
		t.Fatal("the list was taken, or the ring undiverted, with the gap open")
	}
	gap.publish(task{fn: rec("x"), kind: taskImmediate})
	r.RunUntilIdle()
	if got := join(order); got != "x p1 p2" {
		t.Fatalf("ran %q, want %q", got, "x p1 p2")
	}
	if !r.inbox.Idle() || r.overflow.active.Load() {
		t.Fatalf("after the drain: ring idle %v, overflow active %v", r.inbox.Idle(), r.overflow.active.Load())
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
