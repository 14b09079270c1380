package ring

import (
	"runtime"
	"testing"
)

// queue is what MPSC and SPSC share: the tests of what both rings promise
// alike run through it, once.
type queue[T any] interface {
	TryPush(v T) bool
	TryPop() (T, bool)
	TryPopBatch(dst []T) int
	Len() int
}

// testEmpty checks that an empty q pops nothing, singly or in a batch, and
// has Len 0.
func testEmpty(t *testing.T, q queue[string]) {
	t.Helper()
	if v, ok := q.TryPop(); ok || v != "" {
		t.Fatalf("TryPop on empty = %q, %v; want \"\", false", v, ok)
	}
	if n := q.TryPopBatch(make([]string, 4)); n != 0 {
		t.Fatalf("TryPopBatch on empty = %d, want 0", n)
	}
	if q.Len() != 0 {
		t.Fatalf("Len of empty queue = %d", q.Len())
	}
}

// testPopClearsSlots fills q (capacity 4), pops one item and then the rest
// in a batch, and checks that none of its slots (slot(i) reads slot i's
// value) still holds a pointer: a popped slot that kept one would keep its
// object alive.
func testPopClearsSlots(t *testing.T, q queue[*int], slots int, slot func(i int) *int) {
	t.Helper()
	x := new(int)
	for range 4 {
		q.TryPush(x)
	}
	q.TryPop()
	q.TryPopBatch(make([]*int, 4))
	for i := range slots {
		if slot(i) != nil {
			t.Fatalf("slot %d still holds a pointer after being popped", i)
		}
	}
}

// testHoldsPointersAcrossGC fails (with garbage values or a crash) if q
// (capacity 64) ever hides pointers from the garbage collector.
func testHoldsPointersAcrossGC(t *testing.T, q queue[*[64]int]) {
	t.Helper()
	for i := range 64 {
		p := new([64]int)
		p[0], p[63] = i, -i
		q.TryPush(p)
	}
	runtime.GC()
	runtime.GC()
	for i := range 64 {
		p, ok := q.TryPop()
		if !ok || p[0] != i || p[63] != -i {
			t.Fatalf("item %d corrupted after GC", i)
		}
	}
}
