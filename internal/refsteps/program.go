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
//   - Two events due at the same millisecond make the program ambiguous
//     (the order of such events is not part of the spec): Run reports it
//     and the caller skips the program.
package refsteps

import "fmt"

// Program is a set of roots executed together at time 0, in order.
type Program struct {
	Roots []*Root
	End   int // ms: every root still running then is canceled
}

// Root is one root's level-0 steps and when (if ever) it is canceled.
type Root struct {
	Steps    []*Step
	CancelAt int // ms; 0: never
}

// Kind is a step's kind.
type Kind uint8

// Step kinds.
const (
	Plain Kind = iota // a step with a callback
	Par               // a parallel step: Subs are its branches
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

// ExecLine is logged when a step's callback starts, with its arguments.
func ExecLine(id int, args []int) string { return fmt.Sprintf("x%d%v", id, args) }

// CancelLine is logged by a cancel handler.
func CancelLine(id int) string { return fmt.Sprintf("c%d", id) }

// ErrorLine is logged by an error handler.
func ErrorLine(id int, code string) string { return fmt.Sprintf("e%d:%s", id, code) }

// EndOK, EndErr and EndCanceled are a root's last line.
func EndOK(args []int) string   { return fmt.Sprintf("end:ok%v", args) }
func EndErr(code string) string { return "end:err:" + code }
func EndCanceled() string       { return "end:canceled" }

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
	r      *reader
	id     int
	budget int
}

// Decode turns any byte string into a valid program (at most about 40
// steps, nesting at most 5 deep).
func Decode(data []byte) *Program {
	g := &gen{r: &reader{b: data}, budget: 40}
	p := &Program{End: 1000}
	nroots := 1 + g.r.n(3)
	for i := 0; i < nroots; i++ {
		root := &Root{}
		if g.r.n(4) == 0 {
			root.CancelAt = 1 + g.r.n(400)
		}
		nsteps := 1 + g.r.n(3)
		for j := 0; j < nsteps && g.budget > 0; j++ {
			root.Steps = append(root.Steps, g.step(0, true))
		}
		if len(root.Steps) == 0 {
			root.Steps = append(root.Steps, g.step(0, false))
		}
		p.Roots = append(p.Roots, root)
	}
	return p
}

func (g *gen) step(depth int, allowPar bool) *Step {
	g.budget--
	g.id++
	s := &Step{ID: g.id}
	if allowPar && depth < 4 && g.budget > 2 && g.r.n(5) == 0 {
		s.Kind = Par
		nb := g.r.n(4)
		for i := 0; i < nb && g.budget > 0; i++ {
			s.Subs = append(s.Subs, g.step(depth+1, false))
		}
		if g.r.n(2) == 0 {
			s.Handler = g.handler(depth)
		}
		return s
	}
	flags := g.r.byte()
	s.Cancel = flags&1 != 0
	if flags&2 != 0 {
		s.Timeout = 1 + g.r.n(200)
	}
	switch g.r.n(5) {
	case 1:
		s.Act, s.Value = Succeed, g.r.n(100)
	case 2:
		s.Act, s.Code = Fail, Codes[g.r.n(len(Codes))]
	case 3:
		s.Act, s.After, s.OK = Wait, 1+g.r.n(200), g.r.n(2) == 0
		if s.OK {
			s.Value = g.r.n(100)
		} else {
			s.Code = Codes[g.r.n(len(Codes))]
		}
		if g.r.n(3) == 0 {
			s.Stale = 1 + g.r.n(100)
		}
	case 4:
		if depth < 5 && g.budget > 0 {
			s.Act = Subs
			n := 1 + g.r.n(3)
			for i := 0; i < n && g.budget > 0; i++ {
				s.Subs = append(s.Subs, g.step(depth+1, true))
			}
		}
	}
	if flags&4 != 0 {
		s.Handler = g.handler(depth)
	}
	return s
}

func (g *gen) handler(depth int) *Handler {
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
				h.Steps = append(h.Steps, g.step(depth+1, true))
			}
		}
	default:
		h.Kind = Silent
	}
	return h
}
