package timerwheel

import "testing"

// After a burst the pool gives its empty high chunks back;
// handles to dropped nodes stay stale after the pool grows again; pending
// timers are untouched.
func TestShrinkAfterBurst(t *testing.T) {
	w := New(0)
	nop := Entry{Fn: func() {}}
	const burst = 5 * chunkLen
	hs := make([]Handle, burst)
	for i := range hs {
		hs[i] = w.Add(100, nop)
	}
	// One timer stays pending in the last chunk, so nothing can go yet
	// but the free list's order.
	last := hs[burst-1]
	for _, h := range hs[:burst-1] {
		w.Cancel(h)
	}
	if n := w.Shrink(); n != 0 {
		t.Fatalf("Shrink dropped %d bytes with a timer pending in the last chunk", n)
	}
	// New timers now take the lowest free nodes.
	low := w.Add(200, nop)
	if idx, _ := low.Parts(); idx != 1 {
		t.Fatalf("after Shrink a new timer took node %d, want 1", idx)
	}
	w.Cancel(last)
	capBefore := w.Stats().NodesAllocated
	n := w.Shrink()
	if n != (len(hs)/chunkLen)*chunkLen*nodeBytes {
		t.Fatalf("Shrink dropped %d bytes, want every chunk but the first (%d)", n, (len(hs)/chunkLen)*chunkLen*nodeBytes)
	}
	if got := w.Stats().NodesAllocated; got != chunkLen-1 || capBefore <= got {
		t.Fatalf("NodesAllocated %d after Shrink (was %d)", got, capBefore)
	}
	if !w.Valid(low) {
		t.Fatal("the pending timer was lost")
	}
	// Grow again to the same indexes: the old handles must not match.
	var again []Handle
	for i := 0; i < burst; i++ {
		again = append(again, w.Add(300, nop))
	}
	for _, h := range hs {
		if w.Valid(h) || w.Cancel(h) {
			t.Fatalf("a handle from before Shrink matches a node allocated after it: %v", h)
		}
	}
	fired := 0
	for {
		if _, ok := w.Poll(1000); !ok {
			break
		}
		fired++
	}
	if fired != burst+1 {
		t.Fatalf("%d timers fired, want %d", fired, burst+1)
	}
	for _, h := range again {
		if w.Valid(h) {
			t.Fatal("a fired timer is still valid")
		}
	}
}
