package arena

import (
	"sync"
	"testing"
)

// frame is a pointer-holding value of the size of a small step frame.
type frame struct {
	_     *frame // a free-list link, as a real frame has
	data  *payload
	state [4]uint64
}

var (
	sinkBytes *[4]uint64
	sinkFrame *frame
)

// BenchmarkAlloc measures one Alloc plus its share of Release against a
// plain heap allocation of the same type. The impl=new variants leak into a
// package variable so escape analysis cannot keep them on the stack.
func BenchmarkAlloc(b *testing.B) {
	b.Run("kind=bytes/impl=arena", func(b *testing.B) {
		a := New()
		defer a.Close()
		var s Scope
		b.ReportAllocs()
		for b.Loop() {
			p := Alloc[[4]uint64](a, &s)
			p[0] = 1
			a.Release(&s)
		}
	})
	b.Run("kind=bytes/impl=new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := new([4]uint64)
			p[0] = 1
			sinkBytes = p
		}
	})
	b.Run("kind=typed/impl=arena", func(b *testing.B) {
		a := New()
		defer a.Close()
		var s Scope
		pl := &payload{}
		b.ReportAllocs()
		for b.Loop() {
			p := Alloc[frame](a, &s)
			p.data = pl
			a.Release(&s)
		}
	})
	b.Run("kind=typed/impl=new", func(b *testing.B) {
		pl := &payload{}
		b.ReportAllocs()
		for b.Loop() {
			p := new(frame)
			p.data = pl
			sinkFrame = p
		}
	})
	// A step that owns several allocations of mixed kinds, released
	// together; reported per step.
	b.Run("kind=step8/impl=arena", func(b *testing.B) {
		a := New()
		defer a.Close()
		var s Scope
		pl := &payload{}
		b.ReportAllocs()
		for b.Loop() {
			for range 4 {
				Alloc[[4]uint64](a, &s)[0] = 1
				Alloc[frame](a, &s).data = pl
			}
			a.Release(&s)
		}
	})
	b.Run("kind=step8/impl=new", func(b *testing.B) {
		pl := &payload{}
		b.ReportAllocs()
		for b.Loop() {
			for range 4 {
				p := new([4]uint64)
				p[0] = 1
				sinkBytes = p
				f := new(frame)
				f.data = pl
				sinkFrame = f
			}
		}
	})
}

// BenchmarkPool measures a Get+Put pair.
func BenchmarkPool(b *testing.B) {
	b.Run("impl=pool", func(b *testing.B) {
		p := NewPool[frame](0)
		b.ReportAllocs()
		for b.Loop() {
			x := p.Get()
			x.state[0] = 1
			p.Put(x)
		}
	})
	b.Run("impl=sync.Pool", func(b *testing.B) {
		p := sync.Pool{New: func() any { return new(frame) }}
		b.ReportAllocs()
		for b.Loop() {
			x := p.Get().(*frame)
			x.state[0] = 1
			*x = frame{}
			p.Put(x)
		}
	})
	b.Run("impl=new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			x := new(frame)
			x.state[0] = 1
			sinkFrame = x
		}
	})
}
