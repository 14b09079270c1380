package engine

import (
	"runtime"
	"testing"
	"weak"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// bigResult is a result's object that a test watches through a weak
// pointer: reachable or collected.
type bigResult struct{ _ [1 << 16]byte }

// A dropped Promise keeps nothing: once its holder drops it (and the
// *Args its Wait returned), its flow's result values are garbage, as they
// were when each Promise was an allocation of its own. The reactor must
// not keep a dropped Promise's values reachable through the slab it
// carves Promises from past its next trim tick (CONTRACT.md, "A Promise
// is the holder's": only a kept Promise keeps its slab). Before the fix
// the reactor kept its current slab, and so the values of up to 13
// dropped results, until 14 more Promises were made on it: forever on a
// reactor gone idle.
func TestPromiseDroppedKeepsNoValues(t *testing.T) {
	r := reactor.NewManual()
	run := func() weak.Pointer[bigResult] {
		obj := &bigResult{}
		w := weak.Make(obj)
		root := New(r)
		root.Add(func(as *Steps) { as.Success(Obj(obj)) })
		p := root.Promise()
		r.RunUntilIdle()
		a, err := p.Wait()
		if err != nil || a.At(0).Obj() != any(obj) {
			t.Fatalf("Wait: %v %v", a, err)
		}
		root.Release()
		return w
	}
	// One flow, then one more (so that a pooled root's own last values
	// are not what is measured): the first's result must be collectable.
	w := run()
	w2 := run()
	root := New(r)
	root.Add(func(as *Steps) { as.Success(Int(1)) })
	root.Execute()
	r.RunUntilIdle()
	root.Release()
	// The reactor lets go of its slab at its next trim tick.
	r.Advance(trimEvery)
	r.RunUntilIdle()
	for range 3 {
		runtime.GC()
	}
	if w.Value() != nil {
		t.Errorf("the first dropped Promise's result is still reachable after GCs")
	}
	if w2.Value() != nil {
		t.Errorf("the second dropped Promise's result is still reachable after GCs")
	}
	runtime.KeepAlive(r) // the reactor lives on: only the Promise was dropped
}

// The reactor's trim tick lets go of the current slab while goroutines
// claim Promises from it: every claim still gets a slot of its own (a
// caller holding the dropped slab keeps claiming from it, one that finds
// it full installs a new one or keeps its own), and every kept Promise
// reads its own flow's result. The driver advances the manual clock by a
// trim period each turn, so the slab is dropped many times mid-claim.
func TestPromiseSlabDroppedWhileClaimed(t *testing.T) {
	r := reactor.NewManual()
	const goroutines, flows = 4, 150
	kept, all := claimKept(t, goroutines, flows,
		func(int, int) *reactor.Reactor { return r },
		func(p *Promise, _ int, _ int64) bool { <-p.Done(); return true }) // the driver below runs the flow
	drops := 0
	for done := false; !done; {
		select {
		case <-all:
			done = true
		default:
		}
		r.RunUntilIdle()
		if engineOf(r).promises.cur.Load() != nil {
			drops++
		}
		r.Advance(trimEvery)
		r.RunUntilIdle()
	}
	if drops == 0 {
		t.Fatal("the trim tick never found a slab to drop")
	}
	if n := checkKept(t, kept, "after the slabs were dropped"); n != goroutines*flows {
		t.Fatalf("%d results kept, want %d", n, goroutines*flows)
	}
}

// A dropped Promise whose flow failed keeps nothing either: its *Error
// (the code and the ErrorInfo, which may be large) must not stay
// reachable from the reactor past its next trim tick, as a success's
// values do not. Before the fix only a success armed the tick, so a slab
// whose ended Promises had all failed kept their errors until the next
// success on that reactor or 14 more Promises: forever on a reactor gone
// idle, or one whose flows all fail.
func TestPromiseDroppedFailureKeepsNoError(t *testing.T) {
	r := reactor.NewManual()
	run := func(code string) weak.Pointer[Error] {
		root := New(r)
		root.Add(func(as *Steps) { as.Error(code, "a long error info") })
		p := root.Promise()
		r.RunUntilIdle()
		_, err := p.Wait()
		e, ok := err.(*Error)
		if !ok || e.Code != code {
			t.Fatalf("Wait: %v, want %s", err, code)
		}
		root.Release()
		return weak.Make(e)
	}
	w := run("Boom")
	w2 := run(InternalError)
	// Only failures (no success arms the tick), and nothing else on the
	// reactor. Its next trim tick must let go of the slab.
	r.Advance(trimEvery)
	r.RunUntilIdle()
	for range 3 {
		runtime.GC()
	}
	if w.Value() != nil {
		t.Errorf("the first dropped Promise's *Error is still reachable after GCs")
	}
	if w2.Value() != nil {
		t.Errorf("the second dropped Promise's *Error is still reachable after GCs")
	}
	runtime.KeepAlive(r)
}
