package engine

import (
	"cmp"
	"slices"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/arena"
	"github.com/asyncsteps/asyncsteps/internal/cast"
)

// loopState is the state of a Loop, Repeat or ForEach step, allocated with
// the loop's frame and freed with it.
type loopState struct {
	body  ExecFunc                                 // Loop
	rbody func(as *Steps, i int)                   // Repeat
	iter  func(as *Steps, d unsafe.Pointer, i int) // ForEach, ForEachMap
	data  unsafe.Pointer                           // ForEach state
	pc    uintptr                                  // the user body's entry PC, for AsyncStack
	label string
	i, n  int
	kind  uint8
}

const (
	loopForever = iota
	loopCount
	loopIter
)

func (f *Steps) loop() *loopState { return (*loopState)(f.x) }

// call runs one iteration's body on the iteration frame b.
//
//go:nosplit
func (l *loopState) call(b *Steps) {
	// No stack check of its own (go:nosplit): a small fixed frame, and
	// the body it calls checks its own stack; the linker proves the
	// chain fits. 2 Ir of every loop iteration (the ParallelWaitLoop row).
	switch l.kind {
	case loopForever:
		l.body(b)
	case loopCount:
		l.rbody(b, l.i)
	default:
		l.iter(b, l.data, l.i)
	}
}

// loopNext starts L's next iteration as a sub-step, or completes L when its
// count is exhausted.
func (e *engine) loopNext(L *Steps) {
	fl := L.fl
	if fl.owned {
		fl.dropArgs(nil)
	}
	fl.args.reset()
	ls := L.loop()
	if ls.kind != loopForever && ls.i >= ls.n {
		fl.cur = L
		fl.action = actDone
		return
	}
	L.setStatus(stActive)
	b := e.newFrame(kBody, L, fl)
	b.flags = fBare // nothing but its fn (fBare): reuseIteration reads the first line only
	if ls.kind == loopForever {
		// A Loop's iteration carries the body in its fn (a body frame
		// has no fn of its own): run calls it and reuseIteration starts
		// the next iteration without reading L's second line and its
		// loopState, two cache lines a round over many parked flows
		// misses on (the ParallelWaitLoop row). Invariant: a kBody
		// frame's fn is its loop's body when the loop is a Loop, nil
		// for Repeat and ForEach (whose iterations need ls.i and ls.n);
		// reuseIteration keeps it, reset clears it.
		b.fn = ls.body
	}
	fl.cur = b
	fl.action = actExec
}

// loopControl carries out Break or Continue raised by f (spec 2.2.4): the
// steps between f and the target loop are canceled (their cancel handlers
// run, their error handlers do not), then the loop ends or iterates.
func (e *engine) loopControl(f *Steps, r raise) {
	fl := f.fl
	var target *Steps
	for x := f; x != nil; x = x.parent {
		if x.kind == kLoop && (!r.hasLabel || x.loop().label == r.label) {
			target = x
			break
		}
		if x == fl.top {
			break // a branch's top may itself be a loop (Loop on a Parallel accessor)
		}
	}
	if target == nil {
		op := "Break"
		if r.kind == raiseContinue {
			op = "Continue"
		}
		info := op + ": not inside a loop of this flow"
		if r.hasLabel {
			info = op + ": no enclosing loop labelled " + r.label
		}
		e.setError(f, InternalError, info, nil)
		e.unwind(f, InternalError) // f's handler, if it raised this, is spent already
		return
	}
	e.cancelUpTo(f, target)
	fl.cur = target
	if r.kind == raiseBreak {
		fl.clearArgs()
		fl.action = actDone
		return
	}
	target.loop().i++
	e.loopNext(target)
}

// addLoop adds a loop step and its state; nil after a misuse.
func (as *Steps) addLoop(op string, kind uint8, label []string) (*Steps, *loopState) {
	if len(label) > 1 {
		misuse(as, op+": more than one label")
		return nil, nil
	}
	L := as.addFrame(kLoop, op)
	if L == nil {
		return nil, nil
	}
	ls := allocFor[loopState](L)
	L.x = unsafe.Pointer(ls)
	ls.kind = kind
	if len(label) == 1 {
		ls.label = label[0]
	}
	return L, ls
}

// allocFor returns zeroed memory owned by frame f: from the arena while the
// loop runs f's flow, from the heap while a root is being built off the loop
// (the arena belongs to the loop).
func allocFor[T any](f *Steps) *T {
	if f.flags&fBuilt != 0 {
		return new(T)
	}
	f.flags &^= fBare
	return arena.Alloc[T](f.e.ar, &f.scope)
}

// Loop adds a step that runs body again and again until Break (spec 1.8).
// An optional label names it for Break and Continue in inner loops.
func (as *Steps) Loop(body ExecFunc, label ...string) {
	checkReleased(as, "Loop")
	if as == nil {
		return
	}
	if body == nil {
		misuse(as, "Loop: nil body")
		return
	}
	_, ls := as.addLoop("Loop", loopForever, label)
	if ls == nil && as.kind == kForeign {
		as.foreign().Loop(body, optLabel(label))
	}
	if ls != nil {
		ls.body = body
		ls.pc = cast.PCOf(body)
	}
}

// Repeat adds a step that runs body count times, with i from 0.
func (as *Steps) Repeat(count int, body func(as *Steps, i int), label ...string) {
	checkReleased(as, "Repeat")
	if as == nil {
		return
	}
	if body == nil {
		misuse(as, "Repeat: nil body")
		return
	}
	_, ls := as.addLoop("Repeat", loopCount, label)
	if ls == nil && as.kind == kForeign {
		as.foreign().Repeat(count, body, optLabel(label))
	}
	if ls != nil {
		ls.rbody = body
		ls.n = count
		ls.pc = cast.PCOf(body)
	}
}

type forEachState[T any] struct {
	items []T
	body  func(as *Steps, i int, v T)
}

func forEachIter[T any](as *Steps, d unsafe.Pointer, i int) {
	st := (*forEachState[T])(d)
	st.body(as, i, st.items[i])
}

// ForEach adds a step that runs body for each element of items, in order.
// The slice is read as the loop goes: do not change it meanwhile.
func ForEach[T any](as *Steps, items []T, body func(as *Steps, i int, v T), label ...string) {
	if as == nil {
		return
	}
	if body == nil {
		misuse(as, "ForEach: nil body")
		return
	}
	L, ls := as.addLoop("ForEach", loopIter, label)
	if ls == nil {
		if as.kind == kForeign {
			as.foreign().Repeat(len(items), func(as *Steps, i int) { body(as, i, items[i]) }, optLabel(label))
		}
		return
	}
	st := allocFor[forEachState[T]](L)
	st.items, st.body = items, body
	ls.data = unsafe.Pointer(st)
	ls.iter = forEachIter[T]
	ls.n = len(items)
	ls.pc = cast.PCOf(body)
}

type forEachMapState[K cmp.Ordered, V any] struct {
	keys []K
	vals []V
	body func(as *Steps, k K, v V)
}

func forEachMapIter[K cmp.Ordered, V any](as *Steps, d unsafe.Pointer, i int) {
	st := (*forEachMapState[K, V])(d)
	st.body(as, st.keys[i], st.vals[i])
}

// ForEachMap adds a step that runs body for each entry of m, keys in
// ascending order. The entries are copied when ForEachMap is called (this
// allocates two slices); later changes to m are not seen.
func ForEachMap[K cmp.Ordered, V any](as *Steps, m map[K]V, body func(as *Steps, k K, v V), label ...string) {
	if as == nil {
		return
	}
	if body == nil {
		misuse(as, "ForEachMap: nil body")
		return
	}
	L, ls := as.addLoop("ForEachMap", loopIter, label)
	if ls == nil {
		if as.kind == kForeign {
			keys := make([]K, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			as.foreign().Repeat(len(keys), func(as *Steps, i int) { body(as, keys[i], m[keys[i]]) }, optLabel(label))
		}
		return
	}
	st := allocFor[forEachMapState[K, V]](L)
	st.keys = make([]K, 0, len(m))
	for k := range m {
		st.keys = append(st.keys, k)
	}
	slices.Sort(st.keys)
	st.vals = make([]V, len(st.keys))
	for i, k := range st.keys {
		st.vals[i] = m[k]
	}
	st.body = body
	ls.data = unsafe.Pointer(st)
	ls.iter = forEachMapIter[K, V]
	ls.n = len(st.keys)
	ls.pc = cast.PCOf(body)
}

// optLabel returns the optional label, or "".
func optLabel(label []string) string {
	if len(label) > 0 {
		return label[0]
	}
	return ""
}

// Break ends the innermost loop, or the loop named label, as a success
// (spec 1.8.1). It never returns. Outside a loop it is a misuse.
func (as *Steps) Break(label ...string) { as.loopCtl("Break", raiseBreak, label) }

// Continue starts the next iteration of the innermost loop, or of the loop
// named label. It never returns. Outside a loop it is a misuse.
func (as *Steps) Continue(label ...string) { as.loopCtl("Continue", raiseContinue, label) }

func (as *Steps) loopCtl(op string, kind uint8, label []string) {
	if !as.current(op) {
		if as.isForeign() {
			if kind == raiseBreak {
				as.foreign().Break(optLabel(label))
			} else {
				as.foreign().Continue(optLabel(label))
			}
			panic(xForeignUnwind)
		}
		return
	}
	r := raise{kind: kind}
	if len(label) > 0 {
		r.label, r.hasLabel = label[0], true
	}
	as.e.raised = r
	panic(raiseSignal)
}
