package engine

import (
	"math/rand/v2"
	"testing"
)

// checkQueue checks f's queue against want, the frames in order: head is
// the last, each next leads to the following one and the last's to the
// first (the circular list of Steps.head), and queueFirst/queueAfter walk
// it in order.
func checkQueue(t *testing.T, f *Steps, want []*Steps, at string) {
	t.Helper()
	if len(want) == 0 {
		if f.head != nil {
			t.Fatalf("%s: empty queue has head %p", at, f.head)
		}
		if f.queueFirst() != nil {
			t.Fatalf("%s: empty queue has a first frame", at)
		}
		return
	}
	if f.head != want[len(want)-1] {
		t.Fatalf("%s: head is %p, want the last frame %p", at, f.head, want[len(want)-1])
	}
	for i, c := range want {
		if nx := want[(i+1)%len(want)]; c.next != nx {
			t.Fatalf("%s: frame %d of %d links to %p, want %p", at, i, len(want), c.next, nx)
		}
	}
	i := 0
	for c := f.queueFirst(); c != nil; c = f.queueAfter(c) {
		if i >= len(want) || c != want[i] {
			t.Fatalf("%s: walk step %d gave %p", at, i, c)
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("%s: walk gave %d frames, want %d", at, i, len(want))
	}
}

// TestQueueInvariants drives enqueue and dequeue in table-given and random
// orders against a slice: FIFO order, the circular links and an emptied
// queue's nil head (a dequeued frame's next is stale: see dequeue).
func TestQueueInvariants(t *testing.T) {
	frames := make([]Steps, 64)
	run := func(t *testing.T, ops []bool) { // true: enqueue the next frame; false: dequeue
		var f Steps
		var model []*Steps
		n := 0
		for k, add := range ops {
			if add {
				c := &frames[n%len(frames)]
				n++
				c.next = nil
				f.enqueue(c)
				model = append(model, c)
			} else {
				c := f.dequeue()
				switch {
				case len(model) == 0 && c != nil:
					t.Fatalf("op %d: dequeue of an empty queue gave %p", k, c)
				case len(model) == 0:
				case c != model[0]:
					t.Fatalf("op %d: dequeue gave %p, want %p (FIFO)", k, c, model[0])
				default:
					model = model[1:]
				}
			}
			checkQueue(t, &f, model, "op")
		}
	}
	for _, tc := range []struct {
		name string
		ops  []bool
	}{
		{"dequeue empty", []bool{false, false}},
		{"one", []bool{true, false, false}},
		{"two", []bool{true, true, false, false, false}},
		{"refill after empty", []bool{true, false, true, true, false, true, false, false}},
		{"interleaved", []bool{true, true, true, false, true, false, false, true, false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range frames {
				frames[i] = Steps{}
			}
			run(t, tc.ops)
		})
	}
	t.Run("random", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for range 200 {
			for i := range frames {
				frames[i] = Steps{}
			}
			ops := make([]bool, r.IntN(60))
			depth := 0
			for i := range ops {
				// Never more queued than there are frames.
				ops[i] = depth < len(frames) && r.IntN(3) != 0
				if ops[i] {
					depth++
				} else if depth > 0 {
					depth--
				}
			}
			run(t, ops)
		}
	})
}
