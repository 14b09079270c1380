package engine

import (
	"context"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"sync/atomic"
)

// Flow names: a root may carry a name (SetName) saying what kind of flow it
// is - the command of a request, the job of a worker. While the flow's steps
// run, the loop's goroutine carries the pprof label flow=<name>, so a CPU
// profile splits by kind of flow (go tool pprof -tags, -tagfocus=flow=GET);
// under runtime/trace each run of a named or unnamed root is a trace task
// with one region per step.
//
// Cost. A name is interned once (NewName, or SetName's first use of a
// string): its pprof label context is built then, so switching labels on the
// loop is one runtime store, made only when the next flow to run has another
// name than the one the loop carries; a turn that ran named flows puts the
// loop's labels back before it returns, so reactor work between turns (I/O,
// timers) is not charged to the last flow. With no names at all, the check
// is one pointer comparison per flow turn. Measured in profiles/README.md
// ("Flow labels, tracing and metrics").
//
// The loop's goroutine carries no labels of its own between flows: a label
// set on it before Run (pprof.Do around Run) is replaced at the first named
// flow, since the runtime offers no way to read a goroutine's labels back.
// Name the flows instead.

// Name is an interned flow name and its precomputed pprof label context.
// The same string always gives the same *Name. Safe from any goroutine.
type Name struct {
	name string
	ctx  context.Context // carries the pprof label flow=name
	idx  int             // index into each engine's per-name counters
}

// String returns the name.
func (n *Name) String() string {
	if n == nil {
		return ""
	}
	return n.name
}

// MaxNames bounds the distinct flow names of a process: names are for
// kinds of flows (a few dozen), never for identities (a request id). Past
// the bound, NewName returns the name "other", so a runaway caller cannot
// grow memory and profiles without limit.
const MaxNames = 1024

// names is the intern table: copy on write, so a lookup is one atomic load
// and a map read, and the hot path never takes a lock.
var (
	namesMu sync.Mutex
	names   atomic.Pointer[map[string]*Name]
	nameSeq []*Name // by idx; guarded by namesMu, grows only
	other   *Name
)

// NewName returns the interned Name for name, building its pprof label
// context on first use. The empty string gives nil (no name). Safe from any
// goroutine; it allocates only the first time a name is seen.
func NewName(name string) *Name {
	if name == "" {
		return nil
	}
	if m := names.Load(); m != nil {
		if n, ok := (*m)[name]; ok {
			return n
		}
	}
	namesMu.Lock()
	defer namesMu.Unlock()
	old := names.Load()
	if old != nil {
		if n, ok := (*old)[name]; ok {
			return n
		}
		if len(*old) >= MaxNames {
			if other == nil {
				other = newName("other", len(nameSeq))
				nameSeq = append(nameSeq, other)
			}
			return other
		}
	}
	n := newName(name, len(nameSeq))
	nameSeq = append(nameSeq, n)
	m := make(map[string]*Name, len(nameSeq))
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[name] = n
	names.Store(&m)
	return n
}

func newName(name string, idx int) *Name {
	return &Name{name: name, idx: idx, ctx: pprof.WithLabels(context.Background(), pprof.Labels("flow", name))}
}

// SetName names the root's flow (root only, while it is not executing):
// see Name. It keeps the name for later runs until SetName is called again
// or the root is released; "" removes it. Lookup of a name seen before
// allocates nothing; SetFlowName with a kept *Name skips even the lookup.
func (as *Steps) SetName(name string) { as.SetFlowName(NewName(name)) }

// SetFlowName is SetName with an interned Name (nil removes the name).
func (as *Steps) SetFlowName(n *Name) {
	checkReleased(as, "SetFlowName")
	if as == nil || as.kind != kRoot {
		if as != nil && !as.isForeign() {
			misuse(as, "SetName: not a root")
		}
		return
	}
	rt := rootOf(as)
	if rt.isReleased() {
		return
	}
	if rt.running() {
		misuse(as, "SetName: the root is executing")
		return
	}
	if n != nil || rt.more.Load() != nil {
		rt.extra().name = n
	}
}

// FlowName returns the name of the flow as belongs to (any accessor of the
// flow, or the root), or nil.
func (as *Steps) FlowName() *Name {
	checkReleased(as, "FlowName")
	if rt := rootOfFlow(as); rt != nil {
		return rt.name()
	}
	return nil
}

// rootOfFlow is the root of as's flow: as itself for a root (whose flow is
// attached only while it runs), its flow's root for a step; nil otherwise.
func rootOfFlow(as *Steps) *root {
	switch {
	case as == nil:
		return nil
	case as.kind == kRoot:
		return rootOf(as)
	case as.fl != nil:
		return as.fl.root
	}
	return nil
}

// setLabel makes the loop's goroutine carry n's pprof label (none for nil).
// Loop only; callers compare n with e.label first, so this runs once per
// switch between differently named flows.
func (e *engine) setLabel(n *Name) {
	e.label = n
	if n == nil {
		pprof.SetGoroutineLabels(context.Background())
		return
	}
	pprof.SetGoroutineLabels(n.ctx)
}

// Trace support: with runtime/trace on (checked once per turn, so off costs
// one predictable branch per step), every run of a root is a trace task
// named after the flow (or "flow") and every step callback a region named
// after the step's kind, so go tool trace shows each flow's life and where
// its time went, across reactors.

// traceTask is one run's trace task; allocated only while tracing.
type traceTask struct {
	ctx  context.Context
	task *trace.Task
}

// regionNames name a step's trace region by its kind.
var regionNames = [...]string{
	kStep:     "step",
	kBody:     "loop body",
	kLoop:     "loop",
	kParallel: "parallel",
	kSuccess:  "success step",
}

func regionName(kind uint8) string {
	if int(kind) < len(regionNames) && regionNames[kind] != "" {
		return regionNames[kind]
	}
	return "step"
}

// execTraced is exec under runtime/trace: the step runs inside a region of
// its flow's task, started when the flow's first step runs while tracing.
func (e *engine) execTraced(f *Steps) {
	x := f.fl.root.extra()
	if x.trace == nil {
		name := "flow"
		if x.name != nil {
			name = x.name.name
		}
		ctx, task := trace.NewTask(context.Background(), name)
		x.trace = &traceTask{ctx: ctx, task: task}
	}
	e.region = trace.StartRegion(x.trace.ctx, regionName(f.kind))
	e.exec(f)
	e.endRegion()
}

// endRegion ends the region of the step that ran (or raised: drive1's
// recover ends it).
func (e *engine) endRegion() {
	if r := e.region; r != nil {
		e.region = nil
		r.End()
	}
}

// endTrace ends the run's trace task, logging how the flow ended.
func (x *rootExt) endTrace(code string) {
	t := x.trace
	x.trace = nil
	if code == "" {
		code = "success"
	}
	trace.Log(t.ctx, "end", code)
	t.task.End()
}
