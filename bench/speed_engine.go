package bench

import (
	"fmt"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The engine rows that the original scenarios lacked, each beside
// its goroutine peer: Simple with the root never Released (plain New ...
// Execute, as spec users and Go users write it), Sequential passing a Str
// and an Int, and one iteration of an empty Repeat.

// --- SimpleUnreleased ---

// SimpleUnreleased: Simple without Release: engine.New, one empty step,
// Execute, r.RunUntilIdle, and the root dropped for the GC, from the
// benchmark goroutine (driver=goroutine). b.N counts flows.
func SimpleUnreleased(b *testing.B) {
	s := newSimple()
	runDriven(b, "SimpleUnreleased", s.r, DriverGoroutine, func() error { return s.benchUnreleased(b) })
}

// SimpleUnreleasedOnLoop: SimpleUnreleased inside a loop callback (driver=loop).
func SimpleUnreleasedOnLoop(b *testing.B) {
	s := newSimple()
	runDriven(b, "SimpleUnreleased", s.r, DriverLoop, func() error { return s.benchUnreleased(b) })
}

func (s *simpleFixture) opUnreleased() {
	root := engine.New(s.r)
	root.Add(s.step)
	root.Execute()
	s.r.RunUntilIdle()
}

func (s *simpleFixture) benchUnreleased(b *testing.B) error {
	for range warmRounds {
		s.opUnreleased()
	}
	s.ran = 0
	b.ResetTimer()
	for range b.N {
		s.opUnreleased()
	}
	b.StopTimer()
	if s.ran != b.N {
		return fmt.Errorf("SimpleUnreleased: %d of %d steps ran", s.ran, b.N)
	}
	return nil
}

// --- SequentialStrInt ---

const strIntPayload = "payload"

// newStrInt is the Sequential fixture with a step that receives and
// passes on a Str and an Int.
func newStrInt() *sequentialFixture {
	s := &sequentialFixture{name: "SequentialStrInt", r: reactor.NewManual()}
	s.step = func(as *engine.Steps) {
		v := as.Arg(1).Int() + 1
		s.last = v
		as.Success(engine.Str(strIntPayload), engine.Int(v))
	}
	return s
}

// SequentialStrInt: Sequential with each step succeeding with a Str and an
// Int (driver=goroutine). b.N counts steps.
func SequentialStrInt(b *testing.B) {
	s := newStrInt()
	runDriven(b, "SequentialStrInt", s.r, DriverGoroutine, func() error { return s.bench(b) })
}

// SequentialStrIntOnLoop: SequentialStrInt inside a loop callback (driver=loop).
func SequentialStrIntOnLoop(b *testing.B) {
	s := newStrInt()
	runDriven(b, "SequentialStrInt", s.r, DriverLoop, func() error { return s.bench(b) })
}

// strIntMsg is what the peer's stages hand on.
type strIntMsg struct {
	s string
	v int64
}

// SequentialStrIntGoroutines: the Sequential peer's pipeline carrying a
// string and an int64 per hand-off. b.N counts steps.
func SequentialStrIntGoroutines(b *testing.B) {
	benchPipeline(b, "SequentialStrIntGoroutines",
		func(m strIntMsg) strIntMsg { return strIntMsg{strIntPayload, m.v + 1} },
		func(m strIntMsg) int64 { return m.v })
}

// --- RepeatEmpty ---

// repeatRound is how many iterations one Repeat runs.
const repeatRound = 1 << 16

type repeatFixture struct {
	r    *reactor.Reactor
	root *engine.Steps
	body func(as *engine.Steps, i int)
	ran  int
}

func newRepeat() *repeatFixture {
	f := &repeatFixture{r: reactor.NewManual()}
	f.body = func(as *engine.Steps, i int) { f.ran++ }
	return f
}

func (f *repeatFixture) round(n int) error {
	if f.root == nil {
		f.root = engine.New(f.r)
	}
	f.ran = 0
	f.root.Repeat(n, f.body)
	f.root.Execute()
	f.r.RunUntilIdle()
	if f.ran != n {
		return fmt.Errorf("RepeatEmpty: %d of %d iterations ran", f.ran, n)
	}
	return nil
}

func (f *repeatFixture) bench(b *testing.B) error {
	if err := f.round(repeatRound); err != nil {
		return err
	}
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, repeatRound)
		if err := f.round(n); err != nil {
			return err
		}
		left -= n
	}
	b.StopTimer()
	reportPer(b, "iter")
	return nil
}

// RepeatEmpty: one iteration of a Repeat whose body does nothing but count
// (driver=goroutine). b.N counts iterations.
func RepeatEmpty(b *testing.B) {
	f := newRepeat()
	runDriven(b, "RepeatEmpty", f.r, DriverGoroutine, func() error { return f.bench(b) })
}

// RepeatEmptyOnLoop: RepeatEmpty inside a loop callback (driver=loop).
func RepeatEmptyOnLoop(b *testing.B) {
	f := newRepeat()
	runDriven(b, "RepeatEmpty", f.r, DriverLoop, func() error { return f.bench(b) })
}

// repeatPeerBody is a variable so the peer's call stays an indirect call,
// as Repeat's is.
var repeatPeerBody = func(i int, n *int) { *n++ }

// RepeatEmptyGoroutines: the Go way, a for loop calling the body through a
// func value. b.N counts iterations.
func RepeatEmptyGoroutines(b *testing.B) {
	ran := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		repeatPeerBody(i, &ran)
	}
	b.StopTimer()
	if ran != b.N {
		fatalf(b, "RepeatEmptyGoroutines: %d of %d iterations ran", ran, b.N)
	}
	reportPer(b, "iter")
}
