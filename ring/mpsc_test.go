package ring

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stressItems scales a stress test's item count so that the whole package
// stays within a few seconds under -race and under -short.
func stressItems(full int) int {
	switch {
	case raceEnabled:
		return full / 20
	case testing.Short():
		return full / 10
	}
	return full
}

// stallTimeout is how long a stress consumer may go without receiving
// anything before it declares an item lost: without it such a bug would
// show up as a hung test binary instead of a failure.
const stallTimeout = 10 * time.Second

// stallCheck returns a function the consumer calls after each poll with
// the number of items it got; it reports whether the consumer has gone
// stallTimeout without any.
func stallCheck() func(got int) bool {
	var since time.Time
	return func(got int) bool {
		if got > 0 {
			since = time.Time{}
			return false
		}
		if since.IsZero() {
			since = time.Now()
			return false
		}
		return time.Since(since) > stallTimeout
	}
}

func TestRoundCapacity(t *testing.T) {
	cases := []struct{ in, want int }{
		{-7, 2}, {0, 2}, {1, 2}, {2, 2}, {3, 4}, {4, 4}, {5, 8},
		{7, 8}, {8, 8}, {9, 16}, {1000, 1024}, {1024, 1024}, {1025, 2048},
	}
	for _, c := range cases {
		if got := NewMPSC[int](c.in).Cap(); got != c.want {
			t.Errorf("NewMPSC(%d).Cap() = %d, want %d", c.in, got, c.want)
		}
		if got := NewSPSC[int](c.in).Cap(); got != c.want {
			t.Errorf("NewSPSC(%d).Cap() = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestRoundCapacityTooLarge(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("roundCapacity(maxCapacity+1) did not panic")
		}
	}()
	roundCapacity(maxCapacity + 1)
}

func TestMPSCEmpty(t *testing.T) {
	q := NewMPSC[string](4)
	testEmpty(t, q)
	if q.Consumed() != 0 {
		t.Fatalf("empty queue: Consumed = %d; want 0", q.Consumed())
	}
}

func TestMPSCFIFOAndFull(t *testing.T) {
	// 2 is the minimum capacity, where the slot sequence values of
	// adjacent laps are closest together.
	for _, c := range []int{2, 8} {
		t.Run(fmt.Sprint("cap=", c), func(t *testing.T) { testMPSCFIFOAndFull(t, c) })
	}
}

func testMPSCFIFOAndFull(t *testing.T, c int) {
	q := NewMPSC[int](c)
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
	if _, ok := q.TryPushPos(99); ok {
		t.Fatal("TryPushPos into full queue succeeded")
	}
	if q.Len() != c {
		t.Fatalf("Len of full queue = %d, want %d", q.Len(), c)
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
	// One slot freed must be exactly one push accepted.
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
}

func TestMPSCWrapAround(t *testing.T) {
	for _, c := range []int{2, 4} {
		t.Run(fmt.Sprint("cap=", c), func(t *testing.T) { testMPSCWrapAround(t, c) })
	}
}

func testMPSCWrapAround(t *testing.T, c int) {
	q := NewMPSC[uint64](c)
	var next, want uint64
	for round := range 20000 {
		k := round%q.Cap() + 1
		for range k {
			pos, ok := q.TryPushPos(next)
			if !ok {
				t.Fatalf("round %d: push of %d failed", round, next)
			}
			if pos != next {
				t.Fatalf("round %d: position %d, want %d", round, pos, next)
			}
			next++
		}
		for range k {
			v, ok := q.TryPop()
			if !ok || v != want {
				t.Fatalf("round %d: TryPop = %d, %v; want %d, true", round, v, ok, want)
			}
			want++
		}
		if q.Consumed() != next {
			t.Fatalf("round %d: Consumed = %d, want %d", round, q.Consumed(), next)
		}
	}
	if next < 10*uint64(q.Cap()) {
		t.Fatalf("only %d items pushed; test did not wrap", next)
	}
}

func TestMPSCPositions(t *testing.T) {
	q := NewMPSC[string](4)
	for want := range uint64(4) {
		pos, ok := q.TryPushPos("x")
		if !ok || pos != want {
			t.Fatalf("TryPushPos = %d, %v; want %d, true", pos, ok, want)
		}
	}
	if _, ok := q.TryPushPos("full"); ok {
		t.Fatal("TryPushPos into full queue succeeded")
	}
	if q.Consumed() != 0 {
		t.Fatalf("Consumed before any pop = %d", q.Consumed())
	}
	q.TryPop()
	if c := q.Consumed(); c != 1 {
		t.Fatalf("Consumed after one pop = %d; want 1 (position 0 consumed, 1 not)", c)
	}
	// The failed push must not have used up a position.
	if pos, ok := q.TryPushPos("y"); !ok || pos != 4 {
		t.Fatalf("TryPushPos after pop = %d, %v; want 4, true", pos, ok)
	}
	got := make([]string, 8)
	if n := q.TryPopBatch(got); n != 4 {
		t.Fatalf("TryPopBatch = %d, want 4", n)
	}
	if q.Consumed() != 5 {
		t.Fatalf("Consumed after popping everything = %d, want 5", q.Consumed())
	}
}

func TestMPSCTryPopBatch(t *testing.T) {
	q := NewMPSC[int](8)
	for i := range 5 {
		q.TryPush(i)
	}
	dst := make([]int, 3)
	if n := q.TryPopBatch(dst); n != 3 || dst[0] != 0 || dst[1] != 1 || dst[2] != 2 {
		t.Fatalf("TryPopBatch = %d %v; want 3 [0 1 2]", n, dst)
	}
	if q.Consumed() != 3 || q.Len() != 2 {
		t.Fatalf("after batch: Consumed = %d, Len = %d; want 3, 2", q.Consumed(), q.Len())
	}
	dst = make([]int, 10)
	if n := q.TryPopBatch(dst); n != 2 || dst[0] != 3 || dst[1] != 4 {
		t.Fatalf("TryPopBatch = %d %v; want 2 [3 4 ...]", n, dst)
	}
	if n := q.TryPopBatch(nil); n != 0 {
		t.Fatalf("TryPopBatch(nil) = %d", n)
	}
	// Batches across the wrap point, many laps.
	next, want := 0, 0
	for round := range 5000 {
		for q.TryPush(next) {
			next++
		}
		n := q.TryPopBatch(dst[:round%7+1])
		for _, v := range dst[:n] {
			if v != want {
				t.Fatalf("round %d: got %d, want %d", round, v, want)
			}
			want++
		}
	}
	for v, ok := q.TryPop(); ok; v, ok = q.TryPop() {
		if v != want {
			t.Fatalf("drain: got %d, want %d", v, want)
		}
		want++
	}
	if want != next {
		t.Fatalf("popped %d items, pushed %d", want, next)
	}
}

func TestMPSCPopClearsSlots(t *testing.T) {
	q := NewMPSC[*int](4)
	testPopClearsSlots(t, q, len(q.slots), func(i int) *int { return q.slots[i].val })
}

// TestMPSCHoldsPointersAcrossGC fails (with garbage values or a crash) if
// the ring ever hides pointers from the garbage collector.
func TestMPSCHoldsPointersAcrossGC(t *testing.T) {
	testHoldsPointersAcrossGC(t, NewMPSC[*[64]int](64))
}

func TestMPSCZeroAllocs(t *testing.T) {
	q := NewMPSC[uint64](16)
	if n := testing.AllocsPerRun(1000, func() {
		q.TryPush(1)
		q.TryPop()
	}); n != 0 {
		t.Fatalf("TryPush+TryPop allocs = %v, want 0", n)
	}
	qp := NewMPSC[*int](16)
	x := new(int)
	dst := make([]*int, 4)
	if n := testing.AllocsPerRun(1000, func() {
		qp.TryPushPos(x)
		qp.TryPush(x)
		qp.TryPopBatch(dst)
	}); n != 0 {
		t.Fatalf("TryPushPos+TryPush+TryPopBatch (pointer T) allocs = %v, want 0", n)
	}
}

// TestMPSCStress pushes from several producers into a small ring and checks
// that the consumer sees every item exactly once, each producer's items in
// order, and that the k-th popped item is the one TryPushPos gave position
// k.
func TestMPSCStress(t *testing.T) {
	const producers = 8
	n := stressItems(500_000)
	q := NewMPSC[uint64](64)

	// posOf[p][i] is the position producer p got for its i-th item;
	// popIdx[p][i] is the order in which the consumer popped it. Each
	// element is written by one goroutine and read after wg.Wait.
	posOf := make([][]uint64, producers)
	popIdx := make([][]uint64, producers)
	for p := range producers {
		posOf[p] = make([]uint64, n)
		popIdx[p] = make([]uint64, n)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				item := uint64(p)<<32 | uint64(i)
				for {
					pos, ok := q.TryPushPos(item)
					if ok {
						posOf[p][i] = pos
						break
					}
					if stop.Load() {
						return
					}
					runtime.Gosched()
				}
			}
		}()
	}

	total := uint64(producers * n)
	var observerWG sync.WaitGroup
	observerWG.Add(1)
	go func() {
		defer observerWG.Done()
		var last uint64
		for !stop.Load() {
			c := q.Consumed()
			if c < last || c > total {
				t.Errorf("Consumed went from %d to %d (total %d)", last, c, total)
				return
			}
			last = c
			if l := q.Len(); l < 0 || l > q.Cap() {
				t.Errorf("Len = %d outside [0, %d]", l, q.Cap())
				return
			}
			if d, e := q.deq.Load(), q.enq.Load(); e < d {
				t.Errorf("deq %d > enq %d", d, e)
				return
			}
			runtime.Gosched()
		}
	}()

	next := make([]int, producers)
	batch := make([]uint64, 7)
	stalled := stallCheck()
	var popped uint64
	check := func(v uint64) {
		p, i := int(v>>32), int(v&0xffffffff)
		if p >= producers {
			stop.Store(true)
			t.Fatalf("popped item %#x from unknown producer %d", v, p)
		}
		if i != next[p] {
			stop.Store(true)
			t.Fatalf("producer %d: popped item %d, want %d (duplicate, loss or reorder)", p, i, next[p])
		}
		next[p]++
		popIdx[p][i] = popped
		popped++
	}
	for round := 0; popped < total; round++ {
		got := 0
		if round%2 == 0 {
			if v, ok := q.TryPop(); ok {
				check(v)
				got = 1
			}
		} else {
			got = q.TryPopBatch(batch)
			for _, v := range batch[:got] {
				check(v)
			}
		}
		if stalled(got) {
			stop.Store(true)
			t.Fatalf("stalled after %d of %d items; next = %v", popped, total, next)
		}
		if got == 0 {
			runtime.Gosched()
		}
	}
	wg.Wait()
	stop.Store(true)
	observerWG.Wait()

	if v, ok := q.TryPop(); ok {
		t.Fatalf("extra item %#x after all %d were popped", v, total)
	}
	if q.Consumed() != total || q.Len() != 0 {
		t.Fatalf("Consumed = %d, Len = %d; want %d, 0", q.Consumed(), q.Len(), total)
	}
	for p := range producers {
		if next[p] != n {
			t.Fatalf("producer %d: %d items arrived, want %d", p, next[p], n)
		}
		for i := range n {
			if posOf[p][i] != popIdx[p][i] {
				t.Fatalf("producer %d item %d: TryPushPos gave position %d but it was popped %dth",
					p, i, posOf[p][i], popIdx[p][i])
			}
		}
	}
}

func TestMPSCEmptyAgreesWithLen(t *testing.T) {
	q := NewMPSC[int](4)
	check := func(when string) {
		t.Helper()
		if q.Empty() != (q.Len() == 0) {
			t.Fatalf("%s: Empty()=%v, Len()=%d", when, q.Empty(), q.Len())
		}
	}
	check("new")
	for i := range 4 {
		q.TryPush(i)
		check("after push")
	}
	for range 4 {
		q.TryPop()
		check("after pop")
	}
	if !q.Empty() {
		t.Fatal("not Empty after popping everything")
	}
	q.TryPush(1)
	q.Close()
	check("closed with one item")
}

// Idle is Empty for an open queue; a closed one reads as not idle, empty
// or not. A queue made in place by Init behaves as one from NewMPSC.
func TestMPSCIdleAndInit(t *testing.T) {
	var q MPSC[int]
	q.Init(3)
	if q.Cap() != 4 {
		t.Fatalf("Init(3): Cap = %d, want 4", q.Cap())
	}
	steps := []struct {
		do          func()
		empty, idle bool
	}{
		{func() {}, true, true},
		{func() { q.TryPush(1) }, false, false},
		{func() { q.TryPop() }, true, true},
		{func() { q.TryPush(2) }, false, false},
		{func() { q.Close() }, false, false},
		{func() { q.TryPop() }, true, false},
	}
	for i, s := range steps {
		s.do()
		if q.Empty() != s.empty || q.Idle() != s.idle {
			t.Fatalf("step %d: Empty %v Idle %v, want %v %v", i, q.Empty(), q.Idle(), s.empty, s.idle)
		}
	}
}

// Divert makes the queue read as full (pushes fail, Len is Cap, Empty and
// Idle false) and leaves the positions, popping and Close's count as they
// were; items pushed before it stay and pop; Undivert ends it, and each
// is idempotent.
func TestMPSCDivert(t *testing.T) {
	q := NewMPSC[int](4)
	steps := []struct {
		name        string
		do          func() bool // reports whether the step's own result is right
		empty, idle bool
		n           int
	}{
		{"push 1", func() bool { p, ok := q.TryPushPos(1); return ok && p == 0 }, false, false, 1},
		{"divert", func() bool { q.Divert(); return true }, false, false, 4},
		{"push while diverted fails", func() bool { return !q.TryPush(2) }, false, false, 4},
		{"pop the item pushed before", func() bool { v, ok := q.TryPop(); return ok && v == 1 && q.Consumed() == 1 }, false, false, 4},
		{"pop on the diverted, emptied queue finds nothing", func() bool { _, ok := q.TryPop(); return !ok }, false, false, 4},
		{"divert again", func() bool { q.Divert(); return !q.TryPush(3) }, false, false, 4},
		{"undivert", func() bool { q.Undivert(); return true }, true, true, 0},
		{"undivert again", func() bool { q.Undivert(); return true }, true, true, 0},
		{"push after undivert takes the next position", func() bool { p, ok := q.TryPushPos(4); return ok && p == 1 }, false, false, 1},
		{"diverted and closed: the count leaves the bit out", func() bool { q.Divert(); return q.Close() == 2 }, false, false, 4},
		{"pop while closed and diverted", func() bool { v, ok := q.TryPop(); return ok && v == 4 && q.Consumed() == 2 }, false, false, 4},
		{"undivert a closed queue: empty, not idle, pushes still fail", func() bool { q.Undivert(); return !q.TryPush(5) && q.Close() == 2 }, true, false, 0},
	}
	for _, s := range steps {
		if !s.do() {
			t.Fatalf("%s: wrong result", s.name)
		}
		if q.Empty() != s.empty || q.Idle() != s.idle || q.Len() != s.n {
			t.Fatalf("%s: Empty %v Idle %v Len %d, want %v %v %d", s.name, q.Empty(), q.Idle(), q.Len(), s.empty, s.idle, s.n)
		}
	}
}

// A full ring diverted and then drained: producers that found it full
// while diverted retry after Undivert and every item arrives once, in
// each producer's order (no position is lost to the divert bit).
func TestMPSCDivertUnderProducers(t *testing.T) {
	q := NewMPSC[int](8)
	const producers, per = 4, 2000
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				for !q.TryPush(p*per + i) {
					runtime.Gosched()
				}
			}
		}()
	}
	next := make([]int, producers)
	stalled := stallCheck()
	for got := 0; got < producers*per; {
		if got%100 == 0 {
			q.Divert()
			if q.Idle() {
				t.Fatal("Idle on a diverted queue")
			}
			q.Undivert()
		}
		v, ok := q.TryPop()
		if stalled(b2i(ok)) {
			t.Fatalf("no item for %v after %d", stallTimeout, got)
		}
		if !ok {
			runtime.Gosched()
			continue
		}
		p, i := v/per, v%per
		if i != next[p] {
			t.Fatalf("producer %d: got item %d, want %d", p, i, next[p])
		}
		next[p]++
		got++
	}
	wg.Wait()
	if !q.Empty() || q.Len() != 0 || q.Consumed() != producers*per {
		t.Fatalf("after all: Empty %v Len %d Consumed %d", q.Empty(), q.Len(), q.Consumed())
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Claimed counts the positions handed out, diverted or closed or not, and
// leaves both bits out; Consumed reaching it means every claimed item
// was popped.
func TestMPSCClaimed(t *testing.T) {
	q := NewMPSC[int](2)
	steps := []struct {
		name string
		do   func()
		want uint64
	}{
		{"new", func() {}, 0},
		{"push two", func() { q.TryPush(1); q.TryPush(2) }, 2},
		{"full: a failed push claims nothing", func() { q.TryPush(3) }, 2},
		{"divert", q.Divert, 2},
		{"pop one while diverted", func() { q.TryPop() }, 2},
		{"undivert and push", func() { q.Undivert(); q.TryPush(4) }, 3},
		{"divert and close", func() { q.Divert(); q.Close() }, 3},
	}
	for _, s := range steps {
		s.do()
		if got := q.Claimed(); got != s.want {
			t.Fatalf("%s: Claimed %d, want %d", s.name, got, s.want)
		}
	}
	if q.Close() != q.Claimed() {
		t.Fatalf("Close's count %d and Claimed %d differ", q.Close(), q.Claimed())
	}
}
