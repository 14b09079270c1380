package engine

import (
	"reflect"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A batch nested inside a named flow's turn (its cancel handler drives its
// manual reactor, running a flow of another name) hands the loop back with
// the outer flow's label: the outer flow's next steps, in the same turn,
// carry its own name, not the nested flow's nor none.
func TestRunBatchNestedKeepsOuterLabel(t *testing.T) {
	withFlowLabels(t, LabelsAlways)
	r := reactor.NewManual()
	var got []string
	probe := func(tag string) func(*Steps) {
		return func(*Steps) { got = append(got, tag+labelProbe(t)) }
	}
	other := New(r)
	other.SetName("OTHER")
	outer := New(r)
	outer.SetName("OUTER")
	var x External
	outer.Add(func(as *Steps) {
		as.Add(func(as *Steps) {
			as.SetCancel(func(*Steps) {
				other.Add(probe("other"))
				other.Execute()
				r.RunUntilIdle()
			})
			x = as.External()
		})
	}, func(as *Steps, _ string) { as.Success() })
	outer.Add(probe("outer"))
	r.Immediate(func() { outer.Execute() })
	r.RunUntilIdle()
	r.Immediate(func() { x.Error("Inner") })
	r.RunUntilIdle()
	want := []string{`other{"flow":"OTHER"}`, `outer{"flow":"OUTER"}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("labels in steps %q, want %q", got, want)
	}
	if l := labelProbe(t); l != "" {
		t.Fatalf("after the turn the loop's goroutine still carries %s", l)
	}
}
