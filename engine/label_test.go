package engine

import (
	"bytes"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// goroutineLabels returns the pprof labels line of the calling goroutine's
// entry in the goroutine profile, "" when it has none.
func goroutineLabels(t *testing.T, marker string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	// debug=1 groups goroutines by stack: the group whose stack holds
	// marker (a function only this goroutine is in) is ours.
	for _, g := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(g, marker) {
			for _, line := range strings.Split(g, "\n") {
				if strings.HasPrefix(line, "# labels: ") {
					return strings.TrimPrefix(line, "# labels: ")
				}
			}
			return ""
		}
	}
	t.Fatalf("no goroutine with %s in the profile", marker)
	return ""
}

//go:noinline
func labelProbe(t *testing.T) string { return goroutineLabels(t, "engine.labelProbe") }

// withFlowLabels runs the rest of the test under mode m (SetFlowLabels),
// restoring the mode it found.
func withFlowLabels(t *testing.T, m FlowLabelMode) {
	t.Helper()
	was := FlowLabels()
	SetFlowLabels(m)
	t.Cleanup(func() { SetFlowLabels(was) })
}

// A named flow's steps run with the pprof label flow=<name>; an unnamed
// flow's, and the loop between flows, with none (LabelsAlways: the
// default labels only while a CPU profile is recorded,
// TestFlowLabelWhileProfiling).
func TestFlowLabel(t *testing.T) {
	withFlowLabels(t, LabelsAlways)
	r := reactor.NewManual()
	var got []string
	probe := func(as *Steps) { got = append(got, labelProbe(t)) }
	for _, name := range []string{"GET", "", "SET", "GET"} {
		root := New(r)
		root.SetName(name)
		root.Add(probe)
		root.Execute()
	}
	r.RunUntilIdle()
	want := []string{`{"flow":"GET"}`, "", `{"flow":"SET"}`, `{"flow":"GET"}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("labels in steps %q, want %q", got, want)
	}
	if l := labelProbe(t); l != "" {
		t.Fatalf("after the turn the loop's goroutine still carries %s", l)
	}
}

func TestNewNameInterns(t *testing.T) {
	if NewName("") != nil {
		t.Error(`NewName("") is not nil`)
	}
	a, b := NewName("intern-test"), NewName("intern-test")
	if a != b || a.String() != "intern-test" {
		t.Errorf("NewName gave %p %q and %p %q", a, a, b, b)
	}
	r := reactor.NewManual()
	root := New(r)
	root.SetFlowName(a)
	if root.FlowName() != a {
		t.Error("FlowName is not the name set")
	}
	root.Release()
	if n := New(r); n.FlowName() != nil {
		t.Error("a released root kept its name")
	}
}

// Named flows that take turns, so the label switches at every flow, cost no
// allocation.
func TestFlowLabelZeroAllocs(t *testing.T) {
	SkipIfDebug(t)
	for _, m := range []FlowLabelMode{LabelsWhileProfiling, LabelsAlways, LabelsOff} {
		t.Run(m.String(), func(t *testing.T) {
			withFlowLabels(t, m)
			flowLabelZeroAllocs(t)
		})
	}
}

func flowLabelZeroAllocs(t *testing.T) {
	r := reactor.NewManual()
	get, set := NewName("alloc-GET"), NewName("alloc-SET")
	run := func() {
		a, b := New(r), New(r)
		a.SetFlowName(get)
		b.SetFlowName(set)
		a.Add(emptyStep).Add(emptyStep)
		b.Add(emptyStep).Add(emptyStep)
		a.Execute()
		b.Execute()
		r.RunUntilIdle()
		a.Release()
		b.Release()
	}
	for i := 0; i < 10; i++ {
		run()
	}
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Fatalf("%v allocs per run, want 0", n)
	}
}

// Under runtime/trace every run is a task named after its flow, and every
// step a region; a step that raises still ends its region.
func TestFlowTrace(t *testing.T) {
	if trace.IsEnabled() {
		t.Skip("a trace is already running")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	r := reactor.NewManual()
	root := New(r)
	root.SetName("traced-flow-name")
	root.Add(emptyStep)
	root.Repeat(2, func(as *Steps, i int) {})
	root.Add(func(as *Steps) { as.Error("Boom") })
	p := root.Promise()
	r.RunUntilIdle()
	trace.Stop()
	if _, err := p.Wait(); err == nil {
		t.Fatal("flow succeeded")
	}
	if x := rootOf(root).more.Load(); x != nil && x.trace != nil || root.e.region != nil {
		t.Fatal("task or region left open")
	}
	for _, s := range []string{"traced-flow-name", "loop body", "Boom"} {
		if !bytes.Contains(buf.Bytes(), []byte(s)) {
			t.Errorf("trace has no %q", s)
		}
	}
}
