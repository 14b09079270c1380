package engine

import (
	"context"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
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
// loop is one runtime call (about 75 instructions), made only when the next
// flow to run has another name than the one the loop carries; a turn that
// ran named flows puts the loop's labels back before it returns, so reactor
// work between turns (I/O, timers) is not charged to the last flow. With no
// names at all, the check is one pointer comparison per flow turn.
//
// When. Labels are read only by profiles, and a server's flows (one per
// request, SET and GET in turn) would switch them at nearly every flow, so
// by default (LabelsWhileProfiling) the loop switches them only while a
// CPU profile is being recorded: go tool pprof -tagfocus works on any CPU
// profile (runtime/pprof.StartCPUProfile, net/http/pprof's
// /debug/pprof/profile, go test -cpuprofile), and outside one a switch
// between names costs a countdown and two tests instead of a runtime call. The loop looks
// whether a profile is on (one getitimer system call on Linux: the Go
// runtime arms the process's ITIMER_PROF for exactly as long as it records
// a CPU profile) when labelRecheck (10 ms) has passed on its clock, read
// every labelClockFlows (16) named flows, or after 1024 named flows, so
// the first flows of a profile (its first ~10 ms on a busy loop) may lack
// labels. SetFlowLabels(LabelsAlways) labels every named flow at all times
// (the goroutine profile then shows them too), LabelsOff never.
// Measured in profiles/notes/2026-11-27-glue-round5.md.
//
// The loop's goroutine carries no labels of its own between flows: a label
// set on it before Run (pprof.Do around Run) is replaced at the first named
// flow, since the runtime offers no way to read a goroutine's labels back.
// Name the flows instead. So does a goroutine that runs a loop's turn
// itself (Execute, an External's Success, Pass or Error, or Promise.Wait
// from a goroutine onto a parked loop, a manual reactor's driver): while
// labels are on, the named flows of its turn replace its
// labels, and the turn's end leaves it none.

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

// FlowLabelMode says when the loop's goroutine carries flow labels (see
// Name, "When"): SetFlowLabels.
type FlowLabelMode int32

const (
	// LabelsWhileProfiling (the default): named flows carry their label
	// while a CPU profile is being recorded, and only then.
	LabelsWhileProfiling FlowLabelMode = iota
	// LabelsAlways: named flows always carry their label (the goroutine
	// profile shows them; every switch costs its runtime call).
	LabelsAlways
	// LabelsOff: flows never carry labels.
	LabelsOff
)

// String returns the mode's name.
func (m FlowLabelMode) String() string {
	switch m {
	case LabelsWhileProfiling:
		return "LabelsWhileProfiling"
	case LabelsAlways:
		return "LabelsAlways"
	case LabelsOff:
		return "LabelsOff"
	}
	return "FlowLabelMode(" + strconv.Itoa(int(m)) + ")"
}

var (
	labelMode atomic.Int32 // a FlowLabelMode
	// labelEpoch counts SetFlowLabels calls: an engine that saw another
	// epoch looks again at once, so a new mode applies from the next
	// named flow of every loop.
	labelEpoch atomic.Uint32
)

// SetFlowLabels sets when the loops' goroutines carry flow labels, for
// every engine of the process, from the next named flow each runs. Safe
// from any goroutine. An unknown mode is a mistake made outside any flow:
// it panics, naming it.
func SetFlowLabels(m FlowLabelMode) {
	if m < LabelsWhileProfiling || m > LabelsOff {
		panic("engine: SetFlowLabels: unknown mode " + m.String())
	}
	labelMode.Store(int32(m))
	labelEpoch.Add(1)
}

// FlowLabels returns the mode SetFlowLabels set (LabelsWhileProfiling by
// default).
func FlowLabels() FlowLabelMode { return FlowLabelMode(labelMode.Load()) }

const (
	// labelRecheck is how often, by its clock, a loop looks again whether
	// a CPU profile is on (a profile samples every 10 ms of CPU by default).
	labelRecheck = 10 * int64(time.Millisecond)
	// labelClockFlows is how many named flows a loop runs between two
	// reads of its clock (each flow then pays a countdown, not a load).
	labelClockFlows = 16
	// labelRecheckClocks is how many clock reads a loop makes before it
	// looks again whatever its clock says (a manual reactor's clock moves
	// only when its driver advances it): every 1024 named flows.
	labelRecheckClocks = 64
)

// labelState is an engine's view of whether its flows carry labels.
type labelState struct {
	on     bool   // label named flows
	looked bool   // on is from a look (else look at the next named flow)
	epoch  uint32 // labelEpoch when last looked
	left   int32  // named flows before the next clock read
	clocks int32  // clock reads since the last look
	at     int64  // CoarseNow when last looked
}

// switchLabel is RunReady's label switch, for the next flow to run, named
// n (nil: unnamed, or the turn's end), when n is not the name the loop
// last decided for (e.label). The goroutine carries n's label when labels
// are on (e.labeled), none otherwise; either way e.label becomes n, so the
// flows of one name that follow pay nothing, labels on or off. With labels
// off a switch costs a countdown and two tests, and no runtime call.
// Loop only.
func (e *engine) switchLabel(n *Name) {
	on := false
	if n != nil {
		l := &e.lab
		if l.left--; l.left < 0 || l.epoch != labelEpoch.Load() {
			e.lookLabels()
		}
		on = l.on
	}
	e.label = n
	if on {
		e.labeled = true
		pprof.SetGoroutineLabels(n.ctx)
	} else if e.labeled {
		e.labeled = false
		pprof.SetGoroutineLabels(context.Background())
	}
}

// lookLabels runs every labelClockFlows named flows, and at once after
// SetFlowLabels: it decides anew whether named flows carry labels when
// labelRecheck has passed on the loop's clock since the last look, or
// labelRecheckClocks reads of it did, or the mode changed (or it never
// looked).
//
//go:noinline
func (e *engine) lookLabels() {
	l := &e.lab
	l.left = labelClockFlows - 1
	epoch := labelEpoch.Load()
	now := e.r.CoarseNow()
	if l.clocks++; l.looked && l.epoch == epoch && now-l.at < labelRecheck && l.clocks < labelRecheckClocks {
		return
	}
	l.looked, l.epoch, l.at, l.clocks = true, epoch, now, 0
	switch FlowLabelMode(labelMode.Load()) {
	case LabelsAlways:
		l.on = true
	case LabelsOff:
		l.on = false
	default:
		l.on = cpuProfiling()
	}
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
