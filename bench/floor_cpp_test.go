package bench

import (
	"sync/atomic"
	"testing"
)

// The floors of the C++-shaped engine rows: the same indirect
// calls and links as Simple, EmptyIteration and ParallelWaitLoop, as bare
// Go loops with nothing else, so that a row's gap to its target can be
// read against what Go itself costs on the machine. BenchmarkFloorTurn
// (floor_reactor_test.go) is the Turn row's.

// floorStep is a step at its least: a callback, a link, the flow it is in.
type floorStep struct {
	fn   func(s *floorStep)
	next *floorStep
	fl   *floorRoot
}

// floorRoot is a root at its least: its first step and a ready link.
type floorRoot struct {
	head *floorStep
	next *floorRoot
}

// floorPools are the free lists a loop-local pool gives, and a ready list.
type floorPools struct {
	steps *floorStep
	roots *floorRoot
	ready *floorRoot
	tail  *floorRoot
}

func (p *floorPools) step() *floorStep {
	s := p.steps
	if s == nil {
		return &floorStep{}
	}
	p.steps = s.next
	s.next = nil
	return s
}

func (p *floorPools) root() *floorRoot {
	r := p.roots
	if r == nil {
		return &floorRoot{}
	}
	p.roots = r.next
	r.next = nil
	return r
}

func (p *floorPools) push(r *floorRoot) {
	if p.tail == nil {
		p.ready = r
	} else {
		p.tail.next = r
	}
	p.tail = r
}

// runReady runs every ready root's steps in order, each through an
// indirect call, and gives the steps back.
func (p *floorPools) runReady() {
	for r := p.ready; r != nil; {
		next := r.next
		r.next = nil
		for s := r.head; s != nil; {
			s.fn(s)
			n := s.next
			s.fn, s.fl, s.next = nil, nil, p.steps
			p.steps = s
			s = n
		}
		r.head = nil
		r = next
	}
	p.ready, p.tail = nil, nil
}

// BenchmarkFloorSimple is the floor of Simple: a root and a step from free
// lists, linked, the root queued as ready, the loop run (one indirect call
// of the step), both given back.
func BenchmarkFloorSimple(b *testing.B) {
	var p floorPools
	ran := 0
	fn := func(s *floorStep) { ran++ }
	p.roots, p.steps = &floorRoot{}, &floorStep{} // warm, as the engine's pools are
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r := p.root() // New
		s := p.step() // Add
		s.fn, s.fl = fn, r
		r.head = s
		p.push(r) // Execute
		p.runReady()
		r.next, p.roots = p.roots, r // Release
	}
	if ran != b.N {
		b.Fatalf("%d of %d steps ran", ran, b.N)
	}
}

// BenchmarkFloorEmptyIteration is the floor of EmptyIteration: on-loop, a
// look at the local queue and an indirect call of the engine's runner,
// which finds its ready list empty; off-loop, the same with the loop word
// taken and given back (one CAS, one store), as a goroutine that is not
// the loop must.
func BenchmarkFloorEmptyIteration(b *testing.B) {
	var p floorPools
	runner := p.runReady
	var q []func()
	iter := func() {
		for _, f := range q {
			f()
		}
		q = q[:0]
		runner()
	}
	b.Run("on-loop", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			iter()
		}
	})
	b.Run("off-loop", func(b *testing.B) {
		var owner atomic.Uintptr
		b.ReportAllocs()
		for range b.N {
			for !owner.CompareAndSwap(0, 1) {
			}
			iter()
			owner.Store(0)
		}
	})
}

// floorLoopFlow is one of ParallelWaitLoop's flows at its least, spread
// over about the memory the engine's root, flow, loop and two step frames
// take (~1 KiB), its words on different cache lines as the engine's are.
type floorLoopFlow struct {
	ctl  atomic.Uint64 // the parked step's External word
	arg  int64         // the value the completion passes
	_    [112]byte
	cur  *floorStep // the flow's current step
	next *floorLoopFlow
	_    [112]byte
	body func(f *floorLoopFlow) // the loop's body
	_    [760]byte
}

// BenchmarkFloorParallelWaitLoop is the floor of the C++-shaped
// ParallelWaitLoop row, 30,000 flows: per iteration, the completion (one
// CAS on the parked step's word, the Int stored, the flow linked into a
// ready list), then the flow run: the consume step through an indirect
// call, the loop body through another, which takes two step frames from a
// free list and links them (park, consume), and the park step through a
// third, which stores the flow in the waiting list and arms the word. The
// driver's own round (a yield per 30,000 iterations) is left out.
func BenchmarkFloorParallelWaitLoop(b *testing.B) {
	const flows = ParallelFlows
	var p floorPools
	fs := make([]floorLoopFlow, flows)
	waiting := make([]*floorLoopFlow, 0, flows)
	next := make([]*floorLoopFlow, 0, flows)
	var consumed int64
	park := func(s *floorStep) {}
	consume := func(s *floorStep) {}
	body := func(f *floorLoopFlow) {
		s1, s2 := p.step(), p.step()
		s1.fn, s2.fn = park, consume
		s1.next = s2
		f.cur = s1
	}
	// Each flow parked in its first iteration.
	for i := range fs {
		f := &fs[i]
		f.body = body
		f.body(f)
		s := f.cur // park runs
		s.fn(s)
		f.cur = s.next
		s.fn, s.next, p.steps = nil, p.steps, s
		f.ctl.Store(1)
		waiting = append(waiting, f)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		k := min(len(waiting), b.N-done)
		var head, tail *floorLoopFlow
		for _, f := range waiting[:k] { // the driver completes k parked steps
			if c := f.ctl.Load(); c&1 != 0 && f.ctl.CompareAndSwap(c, (c&^1)+2) {
				f.arg = 1
				f.next = nil
				if tail == nil {
					head = f
				} else {
					tail.next = f
				}
				tail = f
			}
		}
		next = append(next[:0], waiting[k:]...)
		for f := head; f != nil; f = f.next { // each flow runs to its next park
			s := f.cur // consume
			s.fn(s)
			consumed += f.arg
			s.fn, s.next, p.steps = nil, p.steps, s
			f.body(f) // the loop's next iteration
			s = f.cur // park
			s.fn(s)
			f.cur = s.next
			s.fn, s.next, p.steps = nil, p.steps, s
			f.ctl.Store(f.ctl.Load() | 1)
			next = append(next, f)
		}
		waiting, next = next, waiting
		done += k
	}
	b.StopTimer()
	if consumed != int64(b.N) {
		b.Fatalf("%d values consumed, want %d", consumed, b.N)
	}
	reportPer(b, "iter")
}
