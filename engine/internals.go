package engine

import (
	"unsafe"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// X holds the engine's entry points for abi and Sync implementers: the
// bridge to FTN12's universal binary interface (spec 2.7: step bindings,
// binary values, a flow's end) and to foreign AsyncSteps implementations
// (NewForeign). Nothing in X is needed to write steps in Go; the generic
// kit for Sync objects (AddWith, AddLocked, Lock, Bound, Rebind, Stack)
// is in the package doc's "Writing a Sync object".
//
// X is a zero-size value: a call through it (engine.X.Binding(as)) is a
// plain function call, inlined where the function is small, as before.
// `go doc -u ./engine internals` lists its methods.
var X internals

// internals is the type of X: it has no state.
type internals struct{}

// SetBridge installs the process's binary bridge. It is called once, when
// the bridge package initializes; a second call panics, since two bridges
// would each receive the other's bindings.
func (internals) SetBridge(b Bridge) {
	xSetBridge(b)
}

// AddBinding adds a step like Add (fn with onerror, which may be nil) and
// gives it the binding bin. It returns the new step's accessor, or nil when
// the step cannot be added (a misuse, or a foreign as: then fn is added
// through the foreign engine), in which case bin is released at once
// through Bridge.Release.
func (internals) AddBinding(as *Steps, fn ExecFunc, onerror ErrorFunc, bin unsafe.Pointer) *Steps {
	return xAddBinding(as, fn, onerror, bin)
}

// Binding returns the binding of as's step, or nil.
func (internals) Binding(as *Steps) unsafe.Pointer {
	return xBinding(as)
}

// Bind gives bin to as, which must have no binding yet: the running step,
// a root, or a parallel step of a root being built. It reports whether bin
// was taken; if not, the caller keeps it.
func (internals) Bind(as *Steps, bin unsafe.Pointer) bool {
	return xBind(as, bin)
}

// OnEnd makes fn run on the loop each time the flow of root ends, with
// the code it failed with ("" after a success, Canceled after a cancel),
// just before the run ends (and a Promise gets its result). fn may release
// the root: it is released once the run has ended. Set it while the root
// is not executing; nil removes it. Release removes it. A panic in fn
// (or a runtime.Goexit) makes the run's outcome InternalError, as a step's
// panic does (LastException the *PanicError): the run still ends once, its
// Promise or Batch gets that error, and the root may run again.
func (internals) OnEnd(root *Steps, fn func(root *Steps, code string)) {
	xOnEnd(root, fn)
}

// Root returns the root of as's flow, or nil for a foreign or nil accessor.
func (internals) Root(as *Steps) *Steps {
	return xRoot(as)
}

// IsRoot reports whether as is a root (New, NewInstance, Clone), as opposed
// to a step's or a parallel step's accessor.
func (internals) IsRoot(as *Steps) bool {
	return xIsRoot(as)
}

// BridgeData returns the bridge's word for as's reactor: per-reactor state
// (abi keeps its pool of step images there). Loop only; nil for a foreign
// or nil accessor.
func (internals) BridgeData(as *Steps) *unsafe.Pointer {
	return xBridgeData(as)
}

// ReportMisuse fails the step that is running on this loop with
// InternalError and info, as a misuse inside its callback does, but
// returns instead of unwinding: the running callback then returns and the
// engine unwinds. A bridge calls it where a panic cannot unwind (through C
// frames). Off the loop, or between callbacks, it does nothing.
func (internals) ReportMisuse(r *reactor.Reactor, info string) {
	xReportMisuse(r, info)
}

// Raised reports whether the running callback of as's loop has raised an
// error, a Break or a Continue (or made a misuse) that will unwind when it
// returns: calls after it are ignored.
func (internals) Raised(as *Steps) bool {
	return xRaised(as)
}

// BinaryValue makes a Value from a value of the binary interface without
// copying its payload: typ is its type descriptor (FutoInType*), word the
// union's eight bytes, custom its custom_data, length its length, and k the
// kind Go code sees. For KindStr and KindBytes word is the data address;
// the payload must stay valid while the Value is in use. owned makes the
// engine call Bridge.Drop when the value leaves a flow's arguments.
func (internals) BinaryValue(typ unsafe.Pointer, word uint64, custom unsafe.Pointer, length uint32, k Kind, owned bool) Value {
	return xBinaryValue(typ, word, custom, length, k, owned)
}

// MakeArgs returns Args holding vals (at most MaxArgs; the rest are
// dropped), for a bridge that receives values from elsewhere.
func (internals) MakeArgs(vals ...Value) (a Args) {
	return xMakeArgs(vals...)
}

// TakeOwned tells the engine that the running step of as is about to
// succeed with owned values (BinaryValue with owned set): the bridge calls
// it first, so that the step path only tests one byte of the flow to know
// whether its values need Bridge.Drop. An owned Value given to a step of
// another flow is not tracked there: it stays valid only while the flow
// that owns it holds it.
func (internals) TakeOwned(as *Steps) {
	xTakeOwned(as)
}

// NewForeign returns a *Steps that forwards every call to impl. Go code
// uses it as any accessor; calls that exist only in Go (AddWith, Bound,
// Hold, ...) work on it where they can be expressed with impl's calls and
// do nothing otherwise.
func (internals) NewForeign(impl Foreign) *Steps {
	return xNewForeign(impl)
}

// ForeignOf returns the Foreign behind a *Steps made by NewForeign, or nil.
func (internals) ForeignOf(as *Steps) Foreign {
	return xForeignOf(as)
}

// BinaryParts returns what BinaryValue took (binary reports whether v was
// made by it): for other values typ and custom are nil, word the payload
// (the data address of a Str or Bytes) and length the byte length.
func (internals) BinaryParts(v Value) (typ unsafe.Pointer, word uint64, custom unsafe.Pointer, length uint32, binary bool) {
	return v.xBinaryParts()
}

// Borrowed returns v without ownership: the engine will not call
// Bridge.Drop for it.
func (internals) Borrowed(v Value) Value {
	return v.xBorrowed()
}

// Owned reports whether the engine will call Bridge.Drop for v.
func (internals) Owned(v Value) bool {
	return v.xOwned()
}

// ForeignUnwind returns the panic value with which Error, Break and Continue on
// a foreign accessor leave the Go callback, after recording the outcome
// with the foreign engine: the bridge that called the callback recovers
// it. Seen outside such a callback, it means one of them was called on a
// foreign accessor whose callback had already returned.
func (internals) ForeignUnwind() error { return xForeignUnwind }

// Disown tells the engine that the running step of as took over the owned
// value in its argument i: a bridge saw the step's callback empty the slot
// (futoin_reset_binval runs the type's cleanup itself, as the C++
// reference's wrapper does with every value it receives). The engine then
// never calls Bridge.Drop for that value, nor for the same value in another
// slot. Loop only: as is the step whose callback just returned.
func (internals) Disown(as *Steps, i int) {
	xDisown(as, i)
}

// OwnsArgs reports whether the flow of as, the accessor of the step whose
// callback a bridge is running, may hold owned values in its arguments. as
// must be that running step's accessor (never nil, never foreign): this is
// on the C step's path, so it checks nothing.
func (internals) OwnsArgs(as *Steps) bool {
	return xOwnsArgs(as)
}
