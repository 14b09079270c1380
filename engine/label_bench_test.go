//go:build linux

package engine

import (
	"io"
	"runtime/trace"
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// The cost of flow labels and tracing, side by side on the Simple and
// Sequential scenarios (engine_bench_test.go):
//
//	labels=none    no flow is named: the label check is one comparison per flow turn
//	labels=one     every flow is named alike: the label is set when a turn starts and reset when it ends
//	labels=switch  two names take turns: the label switches at every flow
//	trace=on       runtime/trace running (into io.Discard), unnamed flows
//
// With no CPU profile recorded (the default LabelsWhileProfiling) named
// flows carry no label: labels=one and labels=switch measure the check
// that says so; their -always variants run under LabelsAlways, the cost of
// the labels themselves (what they cost while a profile is recorded).
//
// "Off" against the engine without labels is the base commit's
// BenchmarkSimple and BenchmarkSequential beside these (profiles/README.md).
func BenchmarkFlowLabels(b *testing.B) {
	names := [2]*Name{NewName("bench-a"), NewName("bench-b")}
	modes := []struct {
		mode  string
		name  func(i int) *Name
		trace bool
	}{
		{"labels=none", func(int) *Name { return nil }, false},
		{"labels=one", func(int) *Name { return names[0] }, false},
		{"labels=switch", func(i int) *Name { return names[i&1] }, false},
		{"labels=one-always", func(int) *Name { return names[0] }, false},
		{"labels=switch-always", func(i int) *Name { return names[i&1] }, false},
		{"trace=on", func(int) *Name { return nil }, true},
	}
	labels := func(b *testing.B, mode string) {
		if strings.HasSuffix(mode, "-always") {
			was := FlowLabels()
			SetFlowLabels(LabelsAlways)
			b.Cleanup(func() { SetFlowLabels(was) })
		}
	}
	for _, m := range modes {
		b.Run("scenario=Simple/"+m.mode, func(b *testing.B) {
			labels(b, m.mode)
			if m.trace {
				startTrace(b)
			}
			r := reactor.NewManual()
			b.ReportAllocs()
			ct := startCPUTimer(b)
			for i := 0; i < b.N; i++ {
				root := New(r)
				root.SetFlowName(m.name(i))
				root.Add(emptyStep)
				root.Execute()
				r.RunUntilIdle()
				root.Release()
			}
			ct.stop()
		})
		b.Run("scenario=Sequential/"+m.mode, func(b *testing.B) {
			labels(b, m.mode)
			if m.trace {
				startTrace(b)
			}
			const steps = 1024
			r := reactor.NewManual()
			root := New(r)
			b.ReportAllocs()
			b.ResetTimer()
			ct := startCPUTimer(b)
			for n := 0; n < b.N; n += steps {
				root.SetFlowName(m.name(n / steps))
				for i := 0; i < steps; i++ {
					root.Add(incStep)
				}
				root.Execute()
				r.RunUntilIdle()
			}
			ct.stop()
		})
	}
}

func startTrace(b *testing.B) {
	if trace.IsEnabled() {
		b.Skip("a trace is already running")
	}
	if err := trace.Start(io.Discard); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(trace.Stop)
}
