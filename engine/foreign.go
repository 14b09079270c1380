package engine

import (
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Foreign is an AsyncSteps accessor of another implementation (spec
// 2.2.1's wrap()): a *Steps made by NewForeign forwards every call to it,
// so ordinary Go step code runs inside a flow that another engine drives.
// Package abi implements it over a foreign FutoInAsyncSteps vtable.
//
// The methods mirror Steps's. Error, Break and Continue record the outcome
// and return: the engine then unwinds the Go callback that made the call
// (with a panic the bridge recovers where it called that callback).
type Foreign interface {
	Add(f ExecFunc, onerror ErrorFunc)
	Parallel(onerror ErrorFunc) *Steps
	State() *State
	Success(args []Value)
	Error(code, info string)
	SetTimeout(d time.Duration)
	SetCancel(f CancelFunc)
	WaitExternal()
	Args() *Args
	// Stack returns size zeroed bytes that live as long as the step; the
	// memory holds no Go pointers.
	Stack(size uintptr) unsafe.Pointer
	Loop(body ExecFunc, label string)
	Repeat(count int, body func(as *Steps, i int), label string)
	Break(label string)
	Continue(label string)
	Execute()
	Cancel()
	Sync(obj Sync, f ExecFunc, onerror ErrorFunc)
	RootID() uintptr
	Valid() bool
	NewInstance() *Steps
	Release()
	// Reactor is the reactor the foreign engine's AsyncTool maps to, or nil.
	Reactor() *reactor.Reactor
}

// foreignSteps is what a foreign accessor's x points to.
type foreignSteps struct {
	impl Foreign
	// box: the value AddWith bound to the step this accessor was made
	// for (Bound, Rebind), shared with the step's handlers; nil for any
	// other step. Set by AddWith's foreign callback, each callback being
	// given an accessor of its own by the bridge.
	box *foreignBox
}

// foreignBox holds a foreign AddWith step's bound value.
type foreignBox struct{ v unsafe.Pointer }

// foreignBound is Bound on a foreign accessor.
func (as *Steps) foreignBound() unsafe.Pointer {
	if b := (*foreignSteps)(as.x).box; b != nil {
		return b.v
	}
	return nil
}

// foreignEngine is the engine of every foreign accessor: its reactor's
// loop is never run, so IsSameThread is false everywhere and every native
// method takes its off-loop (slow) path, where the foreign check lives.
var foreignEngine = &engine{r: reactor.NewManual()}

// xNewForeign returns a *Steps that forwards every call to impl. Go code
// uses it as any accessor; calls that exist only in Go work on it where
// they can be expressed with impl's calls (AddWith, Bound and Rebind in an
// AddWith step and its handlers, AddLocked over a Sync through impl.Sync,
// Stack, Local, External) and fail the flow with InternalError otherwise
// (SetFinally, Hold, Unhold, ForwardArgs); Holds reports false.
func xNewForeign(impl Foreign) *Steps {
	if impl == nil {
		panic("engine.NewForeign: nil Foreign")
	}
	f := &Steps{e: foreignEngine, kind: kForeign, st: stRunning}
	f.x = unsafe.Pointer(&foreignSteps{impl: impl})
	return f
}

// xForeignOf returns the Foreign behind a *Steps made by NewForeign, or nil.
func xForeignOf(as *Steps) Foreign {
	if as == nil || as.kind != kForeign {
		return nil
	}
	return as.foreign()
}

func (as *Steps) foreign() Foreign { return (*foreignSteps)(as.x).impl }

// xForeignUnwind is the panic value with which Error, Break and Continue on
// a foreign accessor leave the Go callback, after recording the outcome
// with the foreign engine: the bridge that called the callback recovers
// it. Seen outside such a callback, it means one of them was called on a
// foreign accessor whose callback had already returned.
var xForeignUnwind error = foreignUnwind{}

type foreignUnwind struct{}

func (foreignUnwind) Error() string {
	return "engine: Error, Break or Continue on a foreign accessor outside the callback the bridge called"
}

// forwardSuccess hands a copy of args to impl: an interface call makes its
// argument escape, and the copy keeps the caller's variadic slice on its
// stack, so only the foreign path allocates.
//
//go:noinline
func forwardSuccess(impl Foreign, args []Value) {
	impl.Success(append([]Value(nil), args...))
}

// foreignMisuse fails the foreign step with InternalError for a kit call
// (op) that a flow another engine drives cannot carry out, and leaves the
// callback as Error does.
func foreignMisuse(as *Steps, op string) {
	as.foreign().Error(InternalError, op+": not available on a foreign accessor (a flow another engine drives): only the spec's calls, AddWith, Bound, AddLocked over a Sync, Stack, Local and External are")
	panic(xForeignUnwind)
}

// isForeign is the check the native slow paths make.
func (as *Steps) isForeign() bool { return as != nil && as.kind == kForeign }
