package engine

import (
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/cast"
)

// AddWith adds a step like Add, binding v to it: the step calls f(as, v).
// It is how library code (sync objects, protocol handlers) gives a step its
// context without allocating a closure per step: f is usually a top-level
// function and v a long-lived object. It returns as.
func AddWith[T any](as *Steps, f func(as *Steps, v *T), v *T, onerror ...ErrorFunc) *Steps {
	if as == nil {
		return nil
	}
	if f == nil {
		misuse(as, "AddWith: nil func")
		return as
	}
	if len(onerror) > 1 {
		misuse(as, "AddWith: more than one ErrorFunc")
		return as
	}
	if c := as.addFrame(kStep, "AddWith"); c != nil {
		c.fn = callBound
		c.xfn = cast.FuncPtr(f)
		c.x = unsafe.Pointer(v)
		if len(onerror) == 1 {
			c.onerr = onerror[0]
		}
	} else if as.kind == kForeign {
		addWithForeign(as, f, v, optErr(onerror))
	}
	return as
}

// addWithForeign is AddWith on a foreign accessor: a closure, built apart
// so that AddWith's own parameters stay on its caller's stack. The bound
// value lives in a box that the step's accessor, its error handler's and
// the cancel handlers it sets (SetCancel) share, so Bound and Rebind work
// there as on a native step.
//
//go:noinline
func addWithForeign[T any](as *Steps, f func(as *Steps, v *T), v *T, onerror ErrorFunc) {
	box := &foreignBox{v: unsafe.Pointer(v)}
	var eh ErrorFunc
	if onerror != nil {
		eh = func(as *Steps, code string) {
			(*foreignSteps)(as.x).box = box
			onerror(as, code)
		}
	}
	as.foreign().Add(func(as *Steps) {
		(*foreignSteps)(as.x).box = box
		f(as, v)
	}, eh)
}

// callBound is the ExecFunc of every AddWith step. It calls the stored
// func(*Steps, *T) through a func(*Steps, unsafe.Pointer): *T and
// unsafe.Pointer are both one pointer, passed the same way by every Go ABI,
// so the call is the same machine call. A generic trampoline (callWith[T])
// would be cleaner but is not free: as a func value inside generic code it
// becomes a closure over the type dictionary, allocated on every AddWith.
func callBound(as *Steps) {
	cast.Func[func(*Steps, unsafe.Pointer)](as.xfn)(as, as.x)
}

// Bound returns the value AddWith (or Rebind) bound to as's step, nil if as
// is not an AddWith step. A static cancel or error handler uses it to find
// its context.
//
// UNCHECKED: T must be exactly the type given to AddWith. The step keeps one
// pointer and no type, so Bound cannot tell; with another T it returns the
// same memory reinterpreted as a T, as an unsafe.Pointer cast would, and
// using it corrupts memory. Call Bound only from handlers of steps your own
// code added with AddWith[T].
func Bound[T any](as *Steps) *T {
	if as == nil || as.xfn == nil {
		if as != nil && as.kind == kForeign {
			return (*T)(as.foreignBound())
		}
		return nil
	}
	return (*T)(as.x)
}

// Rebind replaces the value bound to the running AddWith step: per-run state
// allocated with Stack in the step itself, while the value given to AddWith
// stays immutable and can be shared by copies of the step (CopyFrom,
// Clone). Bound returns the new value from then on.
func Rebind[T any](as *Steps, v *T) {
	if as.current("Rebind") && as.xfn != nil {
		as.x = unsafe.Pointer(v)
	} else if as.isForeign() {
		if b := (*foreignSteps)(as.x).box; b != nil {
			b.v = unsafe.Pointer(v)
		} else {
			foreignMisuse(as, "Rebind outside an AddWith step")
		}
	}
}
