package bench

import (
	"sync/atomic"
	"testing"

	"github.com/asyncsteps/asyncsteps/internal/storerel"
)

// The floors of the reactor-turn rows: the same work as the Turn scenario
// with everything but the unavoidable taken out, as bare Go loops, so that
// the gap between a row and its target can be read against what Go itself
// costs on the machine (profiles/README.md, "Reactor turn").

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
