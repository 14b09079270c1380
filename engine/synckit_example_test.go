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
// object"): a Lock for the one-step uncontended section, and the AddWith
// kit (Bound, ForwardArgs, Holds) on its slow path; syncprim's Mutex is
// the same pattern with a queue. Like every Sync object it is used from
// one reactor's loop here; sharing one across reactors needs atomics (see
// syncprim).
type Gate struct {
	inside, max int
	lock        engine.Lock[Gate]
}

// NewGate sets the Gate's Lock up once, for its whole life.
func NewGate(max int) *Gate {
	g := &Gate{max: max}
	g.lock.Init(g, gateEnter, gateLeave, gateSlow)
	return g
}

// Sync implements engine.Sync: it adds one step, with no per-call state.
func (g *Gate) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	engine.AddLocked(as, &g.lock, f, onerror)
}

// gateEnter lets the flow in when there is room: the section then runs as
// the Sync step itself, and Holds(g) is true inside it. A flow already
// inside takes the slow path.
func gateEnter(as *engine.Steps, g *Gate) bool {
	if g.inside == g.max || as.Holds(g) {
		return false
	}
	g.inside++
	return true
}

// gateLeave runs when an entered section ends: success, error or cancel.
func gateLeave(_ *engine.Steps, g *Gate) { g.inside-- }

// gateSlow is the step when gateEnter declined: it passes a reentrance
// through (f as a sub-step, receiving what this step received) and rejects
// the rest. An object with a queue would wait here, then leave from a
// SetFinally handler that finds its state with Bound.
func gateSlow(as *engine.Steps, g *Gate, f engine.ExecFunc) {
	if !as.Holds(g) {
		as.Error(engine.DefenseRejected, "gate full")
	}
	as.ForwardArgs()
	as.Add(f)
}

func Example_writingASyncObject() {
	r := reactor.NewManual()
	g := NewGate(1)

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
