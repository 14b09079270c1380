package engine

import (
	"sync"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// This file is the engine's side of a bridge to FTN12's universal binary
// interface (spec 2.7): package abi builds on it, and so could a bridge to
// any other implementation. Nothing here is needed to write steps in Go.
//
// The contract between the engine and a bridge, through X's methods
// (internals.go; the x-functions here are their bodies):
//
//   - A step may carry a binding: one word of the bridge's (abi: the C
//     image of the step, its FutoInAsyncSteps). AddBinding sets it when the
//     step is added, Bind later; Binding reads it. When the step is
//     destroyed (or the root released) the engine calls Bridge.Release with
//     it, on the loop, exactly once, and forgets it.
//   - A Value made by BinaryValue with owned set belongs to the flow's
//     arguments it is in: when it leaves them (the next success replaces
//     it, a step adds sub-steps, the flow starts again or its root is
//     released, or an External result that carried it is dropped) the engine
//     calls Bridge.Drop with it, exactly once. A Value that is passed on
//     unchanged (Success with the value it received) stays owned and is
//     not dropped.
//   - A foreign *Steps (NewForeign) forwards every call to a Foreign: the
//     engine's native paths reach the foreign check only on their slow,
//     misuse paths, so a native step pays nothing for it.

// Bridge is what a bridge to the binary interface tells the engine; see
// SetBridge.
type Bridge struct {
	// Release is called when a step's binding is dropped with its step (or
	// its root): on the loop (onLoop true), or on the goroutine that
	// discards a root it was building. It must not call back into the
	// engine.
	Release func(bin unsafe.Pointer, onLoop bool)
	// Copy returns the binding of to, a copy (CopyFrom, Clone) of the step
	// whose binding is bin; the original keeps its own. Nil when it cannot.
	Copy func(bin unsafe.Pointer, to *Steps) unsafe.Pointer
	// Drop is called when an owned Value leaves a flow's arguments. It may
	// run on the loop or, for an External result never delivered, on the
	// goroutine that drops it. It must not call back into the engine.
	Drop func(v *Value)
	// Enter is called, with the reactor's BridgeData word, when Go code
	// acts on the running step (an accessor's call, a misuse, a root
	// canceling itself) while the bridge runs a chain (ChainStart): the
	// bridge hands the engine the chain's current step first (EnterSub),
	// so the action lands on it as it would without the chain.
	Enter func(data unsafe.Pointer)
}

var (
	bridgeOnce sync.Once
	bridge     Bridge
)

// xSetBridge installs the process's binary bridge. It is called once, when
// the bridge package initializes; a second call panics, since two bridges
// would each receive the other's bindings.
func xSetBridge(b Bridge) {
	set := false
	bridgeOnce.Do(func() { bridge, set = b, true })
	if !set {
		panic("engine.SetBridge: a bridge is already installed")
	}
}

// xAddBinding adds a step like Add (fn with onerror, which may be nil) and
// gives it the binding bin. It returns the new step's accessor, or nil when
// the step cannot be added (a misuse, or a foreign as: then fn is added
// through the foreign engine), in which case bin is released at once
// through Bridge.Release.
func xAddBinding(as *Steps, fn ExecFunc, onerror ErrorFunc, bin unsafe.Pointer) *Steps {
	if as == nil {
		return nil
	}
	if fn == nil {
		bridge.release(bin, as.e != nil && as.e.r.IsSameThread())
		misuse(as, "Add: nil execute callback")
		return nil
	}
	c := as.addFrame(kStep, "Add")
	if c == nil {
		bridge.release(bin, as.e != nil && as.e.r.IsSameThread())
		if as.kind == kForeign {
			as.foreign().Add(fn, onerror)
		}
		return nil
	}
	c.fn, c.onerr, c.bin = fn, onerror, bin
	return c
}

func (b *Bridge) release(bin unsafe.Pointer, onLoop bool) {
	if bin != nil && b.Release != nil {
		b.Release(bin, onLoop)
	}
}

// xBinding returns the binding of as's step, or nil.
func xBinding(as *Steps) unsafe.Pointer {
	if as == nil {
		return nil
	}
	return as.bin
}

// xBind gives bin to as, which must have no binding yet: the running step,
// a root, or a parallel step of a root being built. It reports whether bin
// was taken; if not, the caller keeps it.
func xBind(as *Steps, bin unsafe.Pointer) bool {
	if as == nil || as.e == nil || as.bin != nil || as.kind == kForeign || !as.Valid() {
		return false
	}
	as.bin = bin
	as.flags &^= fBare
	if as.kind == kRoot {
		rootOf(as).extKept = true // Release looks at the root's binding only then
	}
	return true
}

// xOnEnd makes fn run on the loop each time the flow of root ends, with
// the code it failed with ("" after a success, Canceled after a cancel),
// just before the run ends (and a Promise gets its result). fn may release
// the root: it is released once the run has ended. Set it while the root
// is not executing; nil removes it. Release removes it. A panic in fn
// (or a runtime.Goexit) makes the run's outcome InternalError, as a step's
// panic does (LastException the *PanicError): the run still ends once, its
// Promise or Batch gets that error, and the root may run again.
func xOnEnd(root *Steps, fn func(root *Steps, code string)) {
	if root == nil || root.kind != kRoot {
		misuse(root, "OnEnd: not a root")
		return
	}
	rootOf(root).extra().onEnd = fn
}

// xRoot returns the root of as's flow, or nil for a foreign or nil accessor.
func xRoot(as *Steps) *Steps {
	if rt := as.builtRoot(); rt != nil {
		return &rt.Steps
	}
	if as == nil || as.fl == nil || as.kind == kForeign {
		return nil
	}
	return &as.fl.root.Steps
}

// xIsRoot reports whether as is a root (New, NewInstance, Clone), as opposed
// to a step's or a parallel step's accessor.
func xIsRoot(as *Steps) bool { return as != nil && as.kind == kRoot }

// xBridgeData returns the bridge's word for as's reactor: per-reactor state
// (abi keeps its pool of step images there). Loop only; nil for a foreign
// or nil accessor.
func xBridgeData(as *Steps) *unsafe.Pointer {
	if as == nil || as.e == nil || as.kind == kForeign {
		return nil
	}
	return &as.e.bridge
}

// xReportMisuse fails the step that is running on this loop with
// InternalError and info, as a misuse inside its callback does, but
// returns instead of unwinding: the running callback then returns and the
// engine unwinds. A bridge calls it where a panic cannot unwind (through C
// frames). Off the loop, or between callbacks, it does nothing.
func xReportMisuse(r *reactor.Reactor, info string) {
	if r == nil {
		return
	}
	e := engineOf(r)
	if !e.r.IsSameThread() || e.cur == nil || e.raised.kind != raiseNone {
		return
	}
	e.leaveChain()
	e.raiseError(e.cur, InternalError, info)
}

// xRaised reports whether the running callback of as's loop has raised an
// error, a Break or a Continue (or made a misuse) that will unwind when it
// returns: calls after it are ignored.
func xRaised(as *Steps) bool {
	return as != nil && as.e != nil && as.kind != kForeign && as.e.raised.kind != raiseNone
}

// Value flags for values of the binary interface (see BinaryValue).
const (
	metaBinary = 1 << 41 // the data address of a Str or Bytes is word; typ is the binary type
	metaOwned  = 1 << 42 // Bridge.Drop runs when the value leaves a flow's arguments
)

// KindBinary is a value of the binary interface with no Go kind (UTF-16
// and UTF-32 strings, arrays other than bytes, custom objects of another
// implementation): package abi reads it.
const KindBinary Kind = KindObj + 1

// xBinaryValue makes a Value from a value of the binary interface without
// copying its payload: typ is its type descriptor (FutoInType*), word the
// union's eight bytes, custom its custom_data, length its length, and k the
// kind Go code sees. For KindStr and KindBytes word is the data address;
// the payload must stay valid while the Value is in use. owned makes the
// engine call Bridge.Drop when the value leaves a flow's arguments.
func xBinaryValue(typ unsafe.Pointer, word uint64, custom unsafe.Pointer, length uint32, k Kind, owned bool) Value {
	m := mkMeta(k, length) | metaBinary
	if owned {
		m |= metaOwned
	}
	return Value{typ: typ, word: word, ref: custom, meta: m}
}

// xBinaryParts returns what BinaryValue took (binary reports whether v was
// made by it): for other values typ and custom are nil, word the payload
// (the data address of a Str or Bytes) and length the byte length.
func (v Value) xBinaryParts() (typ unsafe.Pointer, word uint64, custom unsafe.Pointer, length uint32, binary bool) {
	if v.meta&metaBinary != 0 {
		return v.typ, v.word, v.ref, v.n(), true
	}
	switch v.Kind() {
	case KindStr, KindBytes:
		if v.big() {
			b := v.Bytes()
			return nil, uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), nil, uint32(len(b)), false
		}
	case KindObj:
		return nil, 0, nil, 0, false
	}
	return nil, v.word, nil, v.n(), false
}

// xMakeArgs returns Args holding vals (at most MaxArgs; the rest are
// dropped), for a bridge that receives values from elsewhere.
func xMakeArgs(vals ...Value) (a Args) {
	copy(a.v[:], vals)
	return a
}

// xTakeOwned tells the engine that the running step of as is about to
// succeed with owned values (BinaryValue with owned set): the bridge calls
// it first, so that the step path only tests one byte of the flow to know
// whether its values need Bridge.Drop. An owned Value given to a step of
// another flow is not tracked there: it stays valid only while the flow
// that owns it holds it.
func xTakeOwned(as *Steps) {
	if as != nil && as.fl != nil && as.kind != kForeign {
		as.fl.owned = true
	}
}

// xDisown tells the engine that the running step of as took over the owned
// value in its argument i: a bridge saw the step's callback empty the slot
// (futoin_reset_binval runs the type's cleanup itself, as the C++
// reference's wrapper does with every value it receives). The engine then
// never calls Bridge.Drop for that value, nor for the same value in another
// slot. It does nothing for a value that is not owned. Loop only: as is
// the step whose callback just returned.
func xDisown(as *Steps, i int) {
	if as == nil || as.fl == nil || as.kind == kForeign || i < 0 || i >= MaxArgs {
		return
	}
	a := &as.fl.args
	v := a.v[i]
	if v.meta&metaOwned == 0 {
		return
	}
	for j := range a.v {
		if w := &a.v[j]; w.meta&metaOwned != 0 && w.typ == v.typ && w.word == v.word && w.ref == v.ref {
			w.meta &^= metaOwned
		}
	}
}

// xOwnsArgs reports whether the flow of as, the accessor of the step whose
// callback a bridge is running, may hold owned values in its arguments:
// the bridge tests it before it looks for values its callback took over
// (xDisown), so that other flows pay two loads. as must be that running
// step's accessor (never nil, never foreign): this is on the C step's
// path, so it checks nothing.
func xOwnsArgs(as *Steps) bool { return as.fl.owned }

// xBorrowed returns v without ownership: the engine will not call
// Bridge.Drop for it.
func (v Value) xBorrowed() Value {
	v.meta &^= metaOwned
	return v
}

// xOwned reports whether the engine will call Bridge.Drop for v.
func (v Value) xOwned() bool { return v.meta&metaOwned != 0 }

// Owned values live in a flow's arguments, and fl.owned says whether any
// may be there: the step path tests that one byte, and only a flow that a
// bridge gave owned values pays for the bookkeeping below.

// dropArgs calls Bridge.Drop for each owned value of fl.args that keep
// (the values replacing them) does not pass on, and notes whether keep
// brings owned values of its own.
func (fl *flow) dropArgs(keep []Value) {
	dropOwned(&fl.args, keep)
	fl.owned = false
	for i := range keep {
		if keep[i].meta&metaOwned != 0 {
			fl.owned = true
		}
	}
}

// clearArgs empties fl.args, dropping its owned values.
func (fl *flow) clearArgs() {
	if fl.owned {
		fl.dropArgs(nil)
	}
	fl.args.reset()
}

// setArgs replaces fl.args with vals, off the step path (External results).
// A flow that holds no owned values (fl.owned false: the usual case) has
// nothing to drop; it only notes whether vals bring owned values. The
// drop's scan of the four slots and of vals was a sixth of a waited step's
// completion.
//
// A success with no values (External.Success() from another goroutine, a
// fan-out's usual completion) empties the slots through resetArgs: with
// narrow set it reads slot 0 alone and leaves narrow set, so that this
// reset, the end's emptiness test (endRunClear) and the next start's reset
// read the flow's first line only, not its second (slots 1 and 2) on a
// flow a round over many flows has evicted (the RealParallel row).
func (fl *flow) setArgs(vals []Value) {
	if fl.owned {
		fl.dropArgs(vals)
	} else {
		for i := range vals {
			if vals[i].meta&metaOwned != 0 {
				fl.owned = true
			}
		}
	}
	if len(vals) == 0 {
		fl.resetArgs()
		return
	}
	fl.args.set(vals)
	fl.narrow = false
}

// dropOwned calls Bridge.Drop for each owned value of a not in keep, and
// takes the mark off the slots: they own nothing any more.
func dropOwned(a *Args, keep []Value) {
	for i := range a.v {
		v := &a.v[i]
		if v.meta&metaOwned == 0 {
			continue
		}
		kept := false
		for j := range keep {
			if keep[j] == *v {
				kept = true
				break
			}
		}
		for j := 0; j < i && !kept; j++ {
			// The same value passed on twice is one value: dropped once.
			kept = a.v[j].typ == v.typ && a.v[j].word == v.word && a.v[j].ref == v.ref
		}
		if !kept && bridge.Drop != nil {
			bridge.Drop(v)
		}
		v.meta &^= metaOwned
	}
}

// hasOwned reports whether a holds an owned value.
func (a *Args) hasOwned() bool {
	return (a.v[0].meta|a.v[1].meta|a.v[2].meta|a.v[3].meta)&metaOwned != 0
}
