package ring

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func TestSPSCEmpty(t *testing.T) {
	testEmpty(t, NewSPSC[string](4))
}

func TestSPSCFIFOAndFull(t *testing.T) {
	// 2 is the minimum capacity, where the slot sequence values of
	// adjacent laps are closest together.
	for _, c := range []int{2, 8} {
		t.Run(fmt.Sprint("cap=", c), func(t *testing.T) { testSPSCFIFOAndFull(t, c) })
	}
}

func testSPSCFIFOAndFull(t *testing.T, c int) {
	q := NewSPSC[int](c)
	for i := range c {
		if !q.TryPush(i) {
			t.Fatalf("TryPush(%d) into non-full queue failed", i)
		}
		if q.Len() != i+1 {
			t.Fatalf("Len after %d pushes = %d", i+1, q.Len())
		}
	}
	if q.TryPush(99) {
		t.Fatal("TryPush into full queue succeeded")
	}
	for i := range c {
		v, ok := q.TryPop()
		if !ok || v != i {
			t.Fatalf("TryPop #%d = %d, %v; want %d, true", i, v, ok, i)
		}
	}
	if v, ok := q.TryPop(); ok {
		t.Fatalf("TryPop on drained queue = %d, true", v)
	}
	// Refill, then free exactly one slot: the producer's cached head is
	// stale here and must be refreshed to accept exactly one more push.
	for i := range c {
		q.TryPush(i)
	}
	q.TryPop()
	if !q.TryPush(100) {
		t.Fatal("TryPush after one pop from full queue failed")
	}
	if q.TryPush(101) {
		t.Fatal("second TryPush after one pop from full queue succeeded")
	}
	if q.Len() != c {
		t.Fatalf("Len = %d, want %d", q.Len(), c)
	}
}

func TestSPSCWrapAround(t *testing.T) {
	for _, c := range []int{2, 4} {
		t.Run(fmt.Sprint("cap=", c), func(t *testing.T) { testSPSCWrapAround(t, c) })
	}
}

func testSPSCWrapAround(t *testing.T, c int) {
	q := NewSPSC[uint64](c)
	var next, want uint64
	dst := make([]uint64, 3)
	for round := range 20000 {
		k := round%q.Cap() + 1
		for range k {
			if !q.TryPush(next) {
				t.Fatalf("round %d: push of %d failed", round, next)
			}
			next++
		}
		if round%3 == 0 {
			// Drain through batches of at most 3 to cross the wrap point
			// inside a batch.
			for left := k; left > 0; {
				n := q.TryPopBatch(dst)
				if n == 0 || n > left {
					t.Fatalf("round %d: TryPopBatch = %d with %d queued", round, n, left)
				}
				for _, v := range dst[:n] {
					if v != want {
						t.Fatalf("round %d: got %d, want %d", round, v, want)
					}
					want++
				}
				left -= n
			}
		} else {
			for range k {
				v, ok := q.TryPop()
				if !ok || v != want {
					t.Fatalf("round %d: TryPop = %d, %v; want %d, true", round, v, ok, want)
				}
				want++
			}
		}
		if q.Len() != 0 {
			t.Fatalf("round %d: Len = %d after draining", round, q.Len())
		}
	}
	if next < 10*uint64(q.Cap()) {
		t.Fatalf("only %d items pushed; test did not wrap", next)
	}
}

func TestSPSCPopClearsSlots(t *testing.T) {
	q := NewSPSC[*int](4)
	testPopClearsSlots(t, q, len(q.slots), func(i int) *int { return q.slots[i].val })
}

// TestSPSCHoldsPointersAcrossGC fails (with garbage values or a crash) if
// the ring ever hides pointers from the garbage collector.
func TestSPSCHoldsPointersAcrossGC(t *testing.T) {
	testHoldsPointersAcrossGC(t, NewSPSC[*[64]int](64))
}

func TestSPSCZeroAllocs(t *testing.T) {
	q := NewSPSC[uint64](16)
	if n := testing.AllocsPerRun(1000, func() {
		q.TryPush(1)
		q.TryPop()
	}); n != 0 {
		t.Fatalf("TryPush+TryPop allocs = %v, want 0", n)
	}
	qp := NewSPSC[*int](16)
	x := new(int)
	dst := make([]*int, 4)
	if n := testing.AllocsPerRun(1000, func() {
		qp.TryPush(x)
		qp.TryPush(x)
		qp.TryPopBatch(dst)
	}); n != 0 {
		t.Fatalf("TryPush+TryPopBatch (pointer T) allocs = %v, want 0", n)
	}
}

// TestSPSCStress runs a producer and a consumer on a small ring and checks
// that every item arrives exactly once and in order.
func TestSPSCStress(t *testing.T) {
	n := uint64(stressItems(4_000_000))
	q := NewSPSC[uint64](64)

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range n {
			for !q.TryPush(i) {
				if stop.Load() {
					return
				}
				runtime.Gosched()
			}
		}
	}()
	go func() {
		// Len is documented as callable from any goroutine.
		defer wg.Done()
		for !stop.Load() {
			if l := q.Len(); l < 0 || l > q.Cap() {
				t.Errorf("Len = %d outside [0, %d]", l, q.Cap())
				return
			}
			// Len's clamp would hide a consumer seen ahead of the producer.
			if h, tl := q.head.Load(), q.tail.Load(); tl < h {
				t.Errorf("head %d > tail %d", h, tl)
				return
			}
			runtime.Gosched()
		}
	}()

	batch := make([]uint64, 5)
	stalled := stallCheck()
	var want uint64
	for round := 0; want < n; round++ {
		got := 0
		if round%2 == 0 {
			if v, ok := q.TryPop(); ok {
				batch[0] = v
				got = 1
			}
		} else {
			got = q.TryPopBatch(batch)
		}
		for _, v := range batch[:got] {
			if v != want {
				stop.Store(true)
				t.Fatalf("popped %d, want %d (duplicate, loss or reorder)", v, want)
			}
			want++
		}
		if stalled(got) {
			stop.Store(true)
			t.Fatalf("stalled after %d of %d items", want, n)
		}
		if got == 0 {
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	if v, ok := q.TryPop(); ok {
		t.Fatalf("extra item %d after all %d were popped", v, n)
	}
}
