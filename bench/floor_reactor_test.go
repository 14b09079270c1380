package bench

import (
	"sync/atomic"
	"testing"

	"github.com/asyncsteps/asyncsteps/internal/storerel"
)

// The floors of the reactor-turn rows: the same work as the Turn scenario
// with everything but the unavoidable taken out, as bare Go loops, so that
// the gap between a row and its target can be read against what Go itself
// costs on the machine (profiles/notes/README.md, "Reactor turn").

// floorLoop is the least a manual reactor's loop can be: a queue of
// callbacks owned by whoever holds the loop word.
type floorLoop struct {
	owner atomic.Uintptr
	q     []func()
	head  int
}

// BenchmarkFloorTurn/on-loop: queue a callback on a plain slice and run it
// through an indirect call, with a deferred recover as the reactor's
// panic containment: the driver=loop row's floor (no atomic operation).
// BenchmarkFloorTurn/off-loop: the same with the loop word taken and
// given back twice, once to queue and once to run, as a goroutine that is
// not the loop must (two CAS, two stores): the driver=goroutine row's
// floor on this design.
func BenchmarkFloorTurn(b *testing.B) {
	ran := 0
	fn := func() { ran++ }
	check := func(b *testing.B) {
		if ran < b.N {
			b.Fatalf("%d callbacks ran for b.N %d", ran, b.N)
		}
		ran = 0
	}
	run := func(l *floorLoop) {
		for l.head < len(l.q) {
			f := l.q[l.head]
			l.q[l.head] = nil
			l.head++
			func() {
				defer func() { _ = recover() }()
				f()
			}()
		}
		l.q, l.head = l.q[:0], 0
	}
	b.Run("on-loop", func(b *testing.B) {
		l := &floorLoop{q: make([]func(), 0, 64)}
		for range b.N {
			l.q = append(l.q, fn)
			run(l)
		}
		check(b)
	})
	b.Run("off-loop", func(b *testing.B) {
		l := &floorLoop{q: make([]func(), 0, 64)}
		const me = 1
		for range b.N {
			for !l.owner.CompareAndSwap(0, me) {
			}
			l.q = append(l.q, fn)
			l.owner.Store(0)
			for !l.owner.CompareAndSwap(0, me) {
			}
			run(l)
			l.owner.Store(0)
		}
		check(b)
	})
	// off-loop-rel: off-loop with the word given back by a release-only
	// store (internal/storerel), as the manual reactor now does: two CAS,
	// two plain stores.
	b.Run("off-loop-rel", func(b *testing.B) {
		l := &floorLoop{q: make([]func(), 0, 64)}
		const me = 1
		for range b.N {
			for !l.owner.CompareAndSwap(0, me) {
			}
			l.q = append(l.q, fn)
			storerel.Uintptr(&l.owner, 0)
			for !l.owner.CompareAndSwap(0, me) {
			}
			run(l)
			storerel.Uintptr(&l.owner, 0)
		}
		check(b)
	})
}

// floorTool is the C++ shape's AsyncTool at its least: immediate and
// iterate are calls the benchmark loop makes (the reference's are out of
// line, in its library), the callback an indirect call, and iterate runs
// its queue under one deferred recover, the only panic containment Go has
// (the C++ iterate's try/catch costs nothing until a throw).
type floorTool struct {
	q    []func()
	head int
}

//go:noinline
func (t *floorTool) immediate(fn func()) { t.q = append(t.q, fn) }

// iterate runs the callbacks queued when it was called and reports
// whether more work is ready (none: nothing else feeds this tool).
//
//go:noinline
func (t *floorTool) iterate() bool {
	if t.head == len(t.q) {
		return false
	}
	t.runQueue()
	return t.head != len(t.q)
}

// runQueue is iterate's queue pass: the deferred recover in a frame of
// its own, so that an idle iterate pays no defer, and asked only when the
// pass did not end (recover is a runtime call).
//
//go:noinline
func (t *floorTool) runQueue() {
	done := false
	defer func() {
		if !done {
			_ = recover()
		}
	}()
	for end := len(t.q); t.head < end; {
		f := t.q[t.head]
		t.q[t.head] = nil
		t.head++
		f()
	}
	if t.head == len(t.q) {
		t.q, t.head = t.q[:0], 0
	}
	done = true
}

// BenchmarkFloorToolTurn and BenchmarkFloorToolEmptyIteration are the
// floors with the C++ shape's calls kept: `immediate(cb); iterate()` and
// `iterate()` as out-of-line calls of a tool (floorTool), where
// FloorTurn/on-loop and FloorEmptyIteration/on-loop inline everything
// into the benchmark loop. The Turn and EmptyIteration rows make the
// same two calls and one (RunUntilIdle for iterate: it iterates once
// more only when work is still ready).
func BenchmarkFloorToolTurn(b *testing.B) {
	t := &floorTool{q: make([]func(), 0, 64)}
	ran := 0
	fn := func() { ran++ }
	b.ReportAllocs()
	for range b.N {
		t.immediate(fn)
		t.iterate()
	}
	if ran != b.N {
		b.Fatalf("%d callbacks ran for b.N %d", ran, b.N)
	}
}

func BenchmarkFloorToolEmptyIteration(b *testing.B) {
	t := &floorTool{q: make([]func(), 0, 64)}
	busy := 0
	b.ReportAllocs()
	for range b.N {
		if t.iterate() {
			busy++
		}
	}
	if busy != 0 {
		b.Fatalf("%d idle iterations found work", busy)
	}
}
