// Package refsteps is a reference interpreter of FTN12 AsyncSteps
// semantics, for model-based testing of the engine: slow, simple and meant
// to be obviously correct (each flow is a goroutine running plain
// recursion; no pools, no state machine), plus a generator that decodes a
// byte string into a random step program. Only tests import it.
//
// A program is run on the engine (a manual reactor) and here; both give a
// per-root event log and result, which must be equal.
//
// # Threads
//
// Run executes flows one at a time: each flow is a goroutine, and control
// passes between the scheduler and the flows by channel hand-off, so the
// interpreter's state is only ever touched by one goroutine at a time.
//
// # Lifetimes
//
// Every goroutine Run starts has ended when it returns.
//
// # Invariants
//
//   - Virtual time advances only between events; the ready queue is
//     drained, in FIFO order, before the next event.
//   - Every timer due at one millisecond fires, in the order they were
//     set, before any flow runs (one reactor iteration); then the ready
//     flows run.
//   - Two events of one root due at the same millisecond make the program
//     ambiguous (the order of such events is not part of the spec): Run
//     reports it and the caller skips the program. A root's cancel is the
//     exception: it wins over every other outcome of its instant (a
//     timeout, an External's result, a hand-over), in whatever order the
//     reactor runs them, so programs where they coincide are kept; half
//     of the programs (Decode's first byte) use a 10 ms grain so that
//     they often do.
package refsteps

import "fmt"

// Program is a set of roots executed together at time 0, in order.
type Program struct {
	Roots     []*Root
	End       int        // ms: every root still running then is canceled
	Mutexes   []int      // each a syncprim.Mutex of this many holders, unlimited queue, shared by every root
	Throttles []Throttle // each a syncprim.Throttle, unlimited queue, shared by every root
}

// Throttle is a syncprim.Throttle of Max entries per Period ms.
type Throttle struct{ Max, Period int }

// Object names what Sync step s.Mutex refers to: a mutex (index into
// Mutexes) or, past them, a throttle.
func (p *Program) Object(i int) (mutex int, throttle int) {
	if i < len(p.Mutexes) {
		return i, -1
	}
	return -1, i - len(p.Mutexes)
}

// Root is one root's level-0 steps and when (if ever) it is canceled.
type Root struct {
	Steps    []*Step
	CancelAt int // ms; 0: never
	CloneOf  int // >= 0: built by Clone() of that earlier root (same steps); -1: built itself
	CopyFrom int // >= 0: after its own steps, CopyFrom(that earlier root) adds that root's; -1: none
	Own      int // how many of Steps are its own (the rest came from CopyFrom)
}

// Kind is a step's kind.
type Kind uint8

// Step kinds.
const (
	Plain Kind = iota // a step with a callback
	Par               // a parallel step: Subs are its branches
	Loop              // Repeat(N, Body, Label): Body runs N times
	Sync              // Sync(Program.Object(Mutex), Body, Handler)
)

// Act is what a plain step's callback does last.
type Act uint8

// Actions.
const (
	Implicit Act = iota // return: implicit success, or a wait forever after SetCancel/SetTimeout
	Succeed             // Success(Int(Value))
	Fail                // Error(Code)
	Wait                // External(), completed After ms later (Success(Int(Value)) if OK, else Error(Code)); a second, stale completion Stale ms after that if Stale > 0
	Subs                // Add each of Subs
	Brk                 // Break(Target), or Break() when Target is ""
	Cont                // Continue(Target), or Continue() when Target is ""
)

// Step is one step of a program.
type Step struct {
	ID      int
	Kind    Kind
	Cancel  bool // SetCancel: the cancel handler logs "c<ID>"
	Timeout int  // SetTimeout(Timeout ms); 0: none
	Act     Act
	Value   int
	Code    string
	After   int
	OK      bool
	Stale   int
	Subs    []*Step
	Handler *Handler
	Target  string // Brk, Cont
	N       int    // Loop
	Label   string // Loop; "" for none
	Body    *Step  // Loop, Sync: a Plain step without a handler
	Mutex   int    // Sync: the object, see Program.Object
}

// HandlerKind is what an error handler does.
type HandlerKind uint8

// Handler kinds (spec 1.2.1).
const (
	Recover  HandlerKind = iota // Success(Int(Value)); Success() on a parallel step
	Rethrow                     // Error(Code)
	AddSteps                    // Add each of Steps
	Silent                      // return: keep unwinding
)

// Handler is a step's error handler; it logs "e<ID>:<code>" first.
type Handler struct {
	Kind  HandlerKind
	Value int
	Code  string
	Steps []*Step
}

// Log lines, the same for the engine and the interpreter.

// ExecLine is logged when a step's callback starts, with its arguments
// and the virtual time in ms.
func ExecLine(id int, args []int, now int) string { return fmt.Sprintf("x%d%v@%d", id, args, now) }

// CancelLine is logged by a cancel handler.
func CancelLine(id, now int) string { return fmt.Sprintf("c%d@%d", id, now) }

// ErrorLine is logged by an error handler.
func ErrorLine(id int, code string, now int) string { return fmt.Sprintf("e%d:%s@%d", id, code, now) }

// EndOK is the last line of a root whose flow succeeded with args.
func EndOK(args []int) string { return fmt.Sprintf("end:ok%v", args) }

// EndErr is the last line of a root whose flow failed with code.
func EndErr(code string) string { return "end:err:" + code }

// EndCanceled is the last line of a root whose flow was canceled.
func EndCanceled() string { return "end:canceled" }

// Codes the generator uses (none of them reserved by the engine).
var Codes = []string{"E1", "E2", "E3"}

// reader decodes a fuzzer's bytes; past the end it reads zeros.
type reader struct {
	b []byte
	i int
}

func (r *reader) byte() byte {
	if r.i >= len(r.b) {
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

func (r *reader) n(k int) int { return int(r.byte()) % k }

type gen struct {
	r       *reader
	id      int
	budget  int
	mutexes int
	grain   int // every delay is a multiple of it: 10 makes events coincide
}

// delay is a delay of 1 to k ms, a multiple of the grain.
func (g *gen) delay(k int) int {
	if g.grain <= 1 {
		return 1 + g.r.n(k)
	}
	return g.grain * (1 + g.r.n(max(k/g.grain, 1)))
}

// scope is what a step being generated may refer to: the loops of its own
// flow that enclose it, innermost last ("" for one without a label).
type scope struct{ loops []string }

func (sc scope) inLoop(label string) scope {
	return scope{loops: append(append([]string(nil), sc.loops...), label)}
}

// Decode turns any byte string into a valid program (at most about 40
// steps, nesting at most 5 deep).
func Decode(data []byte) *Program {
	g := &gen{r: &reader{b: data}, budget: 40, grain: 1}
	p := &Program{End: 1000}
	if g.r.n(2) == 1 {
		g.grain = 10
	}
	nm, nt := g.r.n(3), g.r.n(2)
	for i := 0; i < nm; i++ {
		p.Mutexes = append(p.Mutexes, 1+g.r.n(2))
	}
	for i := 0; i < nt; i++ {
		period := 5 + g.r.n(50)
		if g.grain > 1 {
			period = g.delay(50)
		}
		p.Throttles = append(p.Throttles, Throttle{Max: 1 + g.r.n(2), Period: period})
	}
	g.mutexes = nm + nt
	nroots := 1 + g.r.n(4)
	for i := 0; i < nroots; i++ {
		root := &Root{CloneOf: -1, CopyFrom: -1}
		if g.r.n(4) == 0 {
			root.CancelAt = g.delay(400)
		}
		if i > 0 && g.r.n(4) == 0 {
			root.CloneOf = g.r.n(i)
			root.Steps = p.Roots[root.CloneOf].Steps
			p.Roots = append(p.Roots, root)
			continue
		}
		nsteps := 1 + g.r.n(3)
		for j := 0; j < nsteps && g.budget > 0; j++ {
			root.Steps = append(root.Steps, g.step(0, true, scope{}))
		}
		if len(root.Steps) == 0 {
			root.Steps = append(root.Steps, g.step(0, false, scope{}))
		}
		root.Own = len(root.Steps)
		if i > 0 && g.r.n(5) == 0 {
			root.CopyFrom = g.r.n(i)
			root.Steps = append(root.Steps, p.Roots[root.CopyFrom].Steps...)
		}
		p.Roots = append(p.Roots, root)
	}
	return p
}

// step generates a step; compound says whether it may be a parallel, loop
// or Sync step (a branch and a body are plain).
func (g *gen) step(depth int, compound bool, sc scope) *Step {
	g.budget--
	g.id++
	s := &Step{ID: g.id}
	if compound && depth < 4 && g.budget > 2 {
		switch g.r.n(7) {
		case 0:
			s.Kind = Par
			nb := g.r.n(4)
			for i := 0; i < nb && g.budget > 0; i++ {
				s.Subs = append(s.Subs, g.step(depth+1, false, scope{})) // a branch is a flow of its own
			}
			if g.r.n(2) == 0 {
				s.Handler = g.handler(depth, sc)
			}
			return s
		case 1:
			s.Kind, s.N = Loop, g.r.n(4)
			if g.r.n(2) == 0 {
				s.Label = fmt.Sprintf("L%d", s.ID)
			}
			s.Body = g.plain(depth+1, sc.inLoop(s.Label))
			return s
		case 2, 3:
			if g.mutexes > 0 {
				s.Kind, s.Mutex = Sync, g.r.n(g.mutexes)
				s.Body = g.plain(depth+1, sc)
				if g.r.n(4) != 0 {
					s.Handler = g.handler(depth, sc)
				}
				return s
			}
		}
	}
	return g.fill(s, depth, sc)
}

// plain generates a plain step without an error handler (a loop's or a
// Sync's body).
func (g *gen) plain(depth int, sc scope) *Step {
	g.budget--
	g.id++
	s := g.fill(&Step{ID: g.id}, depth, sc)
	s.Handler = nil
	return s
}

// fill makes s a plain step.
func (g *gen) fill(s *Step, depth int, sc scope) *Step {
	flags := g.r.byte()
	s.Cancel = flags&1 != 0
	if flags&2 != 0 {
		s.Timeout = g.delay(200)
	}
	switch g.r.n(5) {
	case 1:
		s.Act, s.Value = Succeed, g.r.n(100)
	case 2:
		s.Act, s.Code = Fail, Codes[g.r.n(len(Codes))]
	case 3:
		s.Act, s.After, s.OK = Wait, g.delay(200), g.r.n(2) == 0
		if s.OK {
			s.Value = g.r.n(100)
		} else {
			s.Code = Codes[g.r.n(len(Codes))]
		}
		if g.r.n(3) == 0 {
			s.Stale = g.delay(100)
		}
	case 4:
		if depth < 5 && g.budget > 0 {
			s.Act = Subs
			n := 1 + g.r.n(3)
			for i := 0; i < n && g.budget > 0; i++ {
				s.Subs = append(s.Subs, g.step(depth+1, true, sc))
			}
		}
	}
	if len(sc.loops) > 0 && flags&8 != 0 {
		s.Act = Brk
		if flags&16 != 0 {
			s.Act = Cont
		}
		var labelled []string
		for _, l := range sc.loops {
			if l != "" {
				labelled = append(labelled, l)
			}
		}
		if len(labelled) > 0 && flags&32 != 0 {
			s.Target = labelled[g.r.n(len(labelled))]
		}
	}
	if flags&4 != 0 {
		s.Handler = g.handler(depth, sc)
	}
	return s
}

func (g *gen) handler(depth int, sc scope) *Handler {
	h := &Handler{}
	switch g.r.n(4) {
	case 0:
		h.Kind, h.Value = Recover, g.r.n(100)
	case 1:
		h.Kind, h.Code = Rethrow, Codes[g.r.n(len(Codes))]
	case 2:
		h.Kind = AddSteps
		if depth < 5 && g.budget > 0 {
			n := 1 + g.r.n(2)
			for i := 0; i < n && g.budget > 0; i++ {
				h.Steps = append(h.Steps, g.step(depth+1, true, sc))
			}
		}
	default:
		h.Kind = Silent
	}
	return h
}
