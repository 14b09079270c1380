package engine_test

import (
	"fmt"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Gate is a small custom Sync object: at most max flows inside at once, a
// flow that finds it full fails with DefenseRejected (no queue), and a
// flow already inside passes through a nested Sync on the same Gate. It
// uses the kit described in the package documentation ("Writing a Sync
// object"); syncprim's Mutex is the same pattern with a queue. Like every
// Sync object it is used from one reactor's loop here; sharing one across
// reactors needs atomics (see syncprim).
type Gate struct {
	inside, max int
}

// section is what one Sync call binds to its step: immutable once added,
// so copies of the step (CopyFrom, Clone) may share it.
type section struct {
	g *Gate
	f engine.ExecFunc
}

// Sync implements engine.Sync: it adds one step, bound to its section
// without a closure.
func (g *Gate) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	sec := engine.Local[section](as) // lives as long as the step that called Sync
	sec.g, sec.f = g, f
	engine.AddWith(as, gateEnter, sec, onerror)
}

// gateEnter is the step: it lets the flow in, or rejects it.
func gateEnter(as *engine.Steps, sec *section) {
	as.ForwardArgs() // the section receives what this step received
	if as.Holds(sec.g) {
		as.Add(sec.f) // reentrance: already inside
		return
	}
	if sec.g.inside == sec.g.max {
		as.Error(engine.DefenseRejected, "gate full")
	}
	sec.g.inside++
	as.Hold(sec.g)
	as.SetFinally(gateLeave) // however the section ends: success, error or cancel
	as.Add(sec.f)
}

// gateLeave is the finally handler: a top-level function that finds its
// context through Bound.
func gateLeave(as *engine.Steps) {
	g := engine.Bound[section](as).g
	as.Unhold(g)
	g.inside--
}

func Example_writingASyncObject() {
	r := reactor.NewManual()
	g := &Gate{max: 1}

	first := engine.New(r)
	first.Add(func(as *engine.Steps) { as.Success(engine.Str("hello")) })
	first.Sync(g, func(as *engine.Steps) {
		fmt.Println("first: inside, received", as.Arg(0).Str())
		as.Sync(g, func(as *engine.Steps) { fmt.Println("first: nested Sync passes through") })
		as.Add(func(as *engine.Steps) { as.WaitExternal() }) // stay inside until canceled
	})
	second := engine.New(r)
	second.Sync(g, func(as *engine.Steps) { fmt.Println("second: inside") },
		func(as *engine.Steps, code string) { fmt.Println("second:", code, as.State().ErrorInfo) })

	first.Execute()
	r.RunUntilIdle()
	second.Execute()
	r.RunUntilIdle()
	first.Cancel() // its finally handler leaves the gate
	r.RunUntilIdle()
	fmt.Println("inside after cancel:", g.inside)
	// Output:
	// first: inside, received hello
	// first: nested Sync passes through
	// second: DefenseRejected gate full
	// inside after cancel: 0
}
