package engine

import (
	"sync/atomic"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// The rows (bench's scenarios) that engine_bench_test.go does not cover, and the floors
// they are measured against: the same work as a bare Go loop of indirect
// calls and frame links, so that a remaining gap can be told apart from the
// cost of the design itself.

func strIntStep(as *Steps) {
	as.Success(Str("payload"), Int(as.Arg(1).Int()+1))
}

// BenchmarkSequentialStrInt is Sequential with a string riding along: it
// must cost what the Int step costs, with no allocation.
func BenchmarkSequentialStrInt(b *testing.B) { benchSequential(b, strIntStep) }

// BenchmarkRepeatEmpty is one iteration of an empty-bodied Repeat.
func BenchmarkRepeatEmpty(b *testing.B) {
	r := reactor.NewManual()
	root := New(r)
	body := func(as *Steps, i int) {}
	b.ReportAllocs()
	b.ResetTimer()
	root.Repeat(b.N, body)
	root.Execute()
	r.RunUntilIdle()
}

// BenchmarkSimpleUnreleased is Simple as spec users and Go users write it:
// New, Add, Execute, and the root dropped, never Released.
func BenchmarkSimpleUnreleased(b *testing.B) {
	r := reactor.NewManual()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		root := New(r)
		root.Add(emptyStep)
		root.Execute()
		r.RunUntilIdle()
	}
}

// BenchmarkSimpleOnLoop is Simple with the root created, executed and
// Released on the loop (inside a callback), as a server's flows are.
func BenchmarkSimpleOnLoop(b *testing.B) {
	r := reactor.NewManual()
	b.ReportAllocs()
	r.Immediate(func() {
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			root := New(r)
			root.Add(emptyStep)
			root.Execute()
			r.RunUntilIdle()
			root.Release()
		}
		b.StopTimer()
	})
	r.RunUntilIdle()
}

// floorFrame is the least a sequential step needs: a function to call, a
// link to the next one, and an argument slot.
type floorFrame struct {
	fn   func(f *floorFrame, a *[4]int64)
	next *floorFrame
}

//go:noinline
func floorInc(f *floorFrame, a *[4]int64) { a[0]++ }

// BenchmarkFloorSequential is the floor of a sequential step: a bare loop
// that links a frame from a free list, calls it through a func value, and
// gives it back (what Add + exec + advance must do at the least).
func BenchmarkFloorSequential(b *testing.B) {
	var free *floorFrame
	for i := 0; i < 1024; i++ {
		free = &floorFrame{next: free}
	}
	var args [4]int64
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += 1024 {
		var head, tail *floorFrame
		for i := 0; i < 1024; i++ { // Add
			f := free
			free = f.next
			f.fn, f.next = floorInc, nil
			if tail == nil {
				head = f
			} else {
				tail.next = f
			}
			tail = f
		}
		for f := head; f != nil; { // run and release
			f.fn(f, &args)
			next := f.next
			f.fn, f.next = nil, free
			free = f
			f = next
		}
	}
	if args[0] == 0 {
		b.Fatal("no step ran")
	}
}

// BenchmarkFloorRepeat is the floor of an empty Repeat iteration: an
// indirect call of the body with its index.
func BenchmarkFloorRepeat(b *testing.B) {
	floorBody = func(as *Steps, i int) {}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		floorBody(nil, i)
	}
}

// floorBody is a variable so that the compiler cannot inline the call.
var floorBody func(as *Steps, i int)

// floorFlow stands for what one waiting flow occupies (root, flow, frame
// and loop state: about 1 KiB), spread over the cache lines the engine
// touches per iteration.
type floorFlow struct {
	ctl  atomic.Uint64 // the frame's External word
	_    [120]byte
	cur  *floorFlow // the flow's current frame and ready link
	next *floorFlow
	_    [112]byte
	body func(f *floorFlow, i int) // the loop's body
	i    int
	_    [752]byte
}

// BenchmarkFloorWaitLoop is the floor of a ParallelWaitLoop iteration
// with 30,000 flows: per iteration, one CAS on the waiting frame's word
// (the completion), a link into a ready list, and an indirect call of the
// body that arms the next wait, each on its own cache line of a ~1 KiB
// object, the objects visited in order as the engine visits its flows.
// The working set (30 MB) does not fit the cache: this is the memory
// floor the engine cannot go below with this much state per flow.
func BenchmarkFloorWaitLoop(b *testing.B) {
	const flows = 30000
	fs := make([]floorFlow, flows)
	body := func(f *floorFlow, i int) { f.ctl.Store(uint64(i)<<2 | 1) }
	for i := range fs {
		fs[i].body = body
		fs[i].ctl.Store(1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += flows {
		var head, tail *floorFlow
		for i := range fs { // complete every wait (External.Success)
			f := &fs[i]
			if c := f.ctl.Load(); f.ctl.CompareAndSwap(c, c|2) {
				f.next = nil
				if tail == nil {
					head = f
				} else {
					tail.next = f
				}
				tail = f
			}
		}
		for f := head; f != nil; f = f.next { // run each flow's next iteration
			f.i++
			f.cur = f
			f.body(f, f.i)
		}
	}
}
