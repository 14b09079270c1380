package engine

import (
	"reflect"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A cancel handler that runs inside runBatch (its flow was queued to fail:
// an External's Error, unwound by run's actFail, not by a recover) drives
// its manual reactor, so a nested RunReady runs another flow in a batch of
// its own; the outer flow's next step then panics, inside the outer
// runBatch. The panic is the outer flow's InternalError and the outer flow
// goes on: the nested batch left batchFl naming its own flow, and without
// runReadyNested's restore the outer recover would hand the other, ended,
// flow to caught and driveOn, and the outer flow would be left half-driven.
func TestRunBatchNestedInsideBatchRestoresFlow(t *testing.T) {
	r := reactor.NewManual()
	var seq []string
	other := New(r)
	outer := New(r)
	var x External
	outer.Add(func(as *Steps) {
		as.Add(func(as *Steps) {
			as.SetCancel(func(*Steps) {
				other.Add(func(*Steps) { seq = append(seq, "other") })
				other.Execute()
				r.RunUntilIdle() // the nested batch runs other
			})
			x = as.External()
		})
	}, func(as *Steps, code string) {
		seq = append(seq, "outer.err:"+code)
		as.Success()
	})
	outer.Add(func(*Steps) {
		seq = append(seq, "outer.2")
		panic("boom")
	}, func(as *Steps, code string) {
		seq = append(seq, "outer.2.err:"+code)
		as.Success()
	})
	outer.Add(func(*Steps) { seq = append(seq, "outer.3") })
	var ended string
	X.OnEnd(outer, func(_ *Steps, code string) { ended = "end:" + code })
	r.Immediate(func() { outer.Execute() })
	r.RunUntilIdle()
	if !x.Valid() {
		t.Fatalf("outer's inner step does not wait (%q)", seq)
	}
	// From a loop callback: the flow is queued with actFail and unwound
	// inside the next batch, where its cancel handler runs.
	r.Immediate(func() { x.Error("Inner") })
	r.RunUntilIdle()
	want := []string{"other", "outer.err:Inner", "outer.2", "outer.2.err:InternalError", "outer.3"}
	if !reflect.DeepEqual(seq, want) {
		t.Fatalf("runs %q, want %q", seq, want)
	}
	if ended != "end:" {
		t.Fatalf("outer ended %q, want a success", ended)
	}
	if st := StatsOf(r); st.FramesLive != 0 {
		t.Fatalf("%d frames live after every flow ended (%q)", st.FramesLive, seq)
	}
}
