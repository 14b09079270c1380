package bench

import (
	"runtime"
	"testing"
)

// --- Turn ---

// turnPeer is the Go way to run a callback on another goroutine and wait
// for it: a long-lived worker goroutine fed through a channel, answering on
// another.
type turnPeer struct {
	work chan func()
	done chan struct{}
	ran  int
}

func newTurnPeer() *turnPeer {
	p := &turnPeer{work: make(chan func()), done: make(chan struct{})}
	go func() {
		for fn := range p.work {
			fn()
			p.done <- struct{}{}
		}
	}()
	return p
}

func (p *turnPeer) op(fn func()) {
	p.work <- fn
	<-p.done
}

// TurnGoroutines: an empty callback handed to a worker goroutine over an
// unbuffered channel, waited for on another. b.N counts callbacks.
func TurnGoroutines(b *testing.B) {
	p := newTurnPeer()
	defer close(p.work)
	fn := func() { p.ran++ }
	for range warmRounds {
		p.op(fn)
	}
	p.ran = 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p.op(fn)
	}
	b.StopTimer()
	if p.ran != b.N {
		fatalf(b, "TurnGoroutines: %d of %d callbacks ran", p.ran, b.N)
	}
}

// EmptyIterationGoroutines: the Go scheduler's turn with nothing else to
// run, runtime.Gosched. b.N counts iterations.
func EmptyIterationGoroutines(b *testing.B) {
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		runtime.Gosched()
	}
}
