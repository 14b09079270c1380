package engine

import (
	"reflect"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// One batch of RunReady (runBatch) stopped three times: a flow
// whose step panics, a flow canceled by that step after it was queued, a
// flow whose step raises an error; the flows after each stop still run in
// their order, in the same batch, and each stopped flow ends as before
// (the panic as InternalError to its own error handler, the canceled flow
// without running its step, the raise to its handler).
func TestRunBatchGoesOnAfterStops(t *testing.T) {
	r := reactor.NewManual()
	var seq []string
	a, b, c, d, e2 := New(r), New(r), New(r), New(r), New(r)
	for _, root := range []*Steps{a, b, c, d, e2} {
		X.DeferStart(root, true) // queued by Execute, run by RunReady below
	}
	a.Add(func(*Steps) {
		seq = append(seq, "a")
		b.Cancel()
		panic("boom")
	}, func(_ *Steps, code string) { seq = append(seq, "a.err:"+code) })
	b.Add(func(*Steps) { seq = append(seq, "b") })
	c.Add(func(*Steps) { seq = append(seq, "c") })
	d.Add(func(as *Steps) {
		seq = append(seq, "d")
		as.Error("Boom", "")
	}, func(_ *Steps, code string) { seq = append(seq, "d.err:"+code) })
	e2.Add(func(*Steps) { seq = append(seq, "e") })
	var batches uint64
	r.Immediate(func() {
		for _, root := range []*Steps{a, b, c, d, e2} {
			root.Execute()
		}
		before := StatsOf(r)
		_ = before
		RunReady(r) // the five in one batch
		batches++
	})
	r.RunUntilIdle()
	want := []string{"a", "a.err:InternalError", "c", "d", "d.err:Boom", "e"}
	if !reflect.DeepEqual(seq, want) {
		t.Fatalf("runs %q, want %q", seq, want)
	}
	if batches != 1 {
		t.Fatalf("callback ran %d times", batches)
	}
	if st := StatsOf(r); st.FramesLive != 0 {
		t.Fatalf("%d frames live after every flow ended", st.FramesLive)
	}
	// Every root ended: each runs again.
	seq = nil
	for _, root := range []*Steps{a, b, c, d, e2} {
		root.Add(func(*Steps) { seq = append(seq, "again") })
		root.Execute()
	}
	r.RunUntilIdle()
	if len(seq) != 5 {
		t.Fatalf("%d of 5 roots ran again: %q", len(seq), seq)
	}
}

// A cancel handler that drives its manual reactor while its flow is being
// unwound runs another flow's batch inside (RunReady from the handler); a
// panic in the unwound flow's next step is still that flow's InternalError,
// and the flow goes on after its handler. (The handler runs from
// batchStopped here, not inside runBatch: runReadyNested's restore of
// batchFl is not what this pins.)
func TestRunBatchNestedKeepsItsFlow(t *testing.T) {
	r := reactor.NewManual()
	var seq []string
	other := New(r)
	outer := New(r)
	outer.Add(func(as *Steps) {
		as.Add(func(as *Steps) {
			as.SetCancel(func(*Steps) {
				// The inner flow is queued; driving here runs it.
				other.Add(func(*Steps) { seq = append(seq, "other") })
				other.Execute()
				r.RunUntilIdle()
			})
			as.Error("Inner", "")
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
	r.Immediate(func() { outer.Execute() })
	r.RunUntilIdle()
	// Whatever order the nested drive gives "other", outer's own outcomes
	// are its own.
	var own []string
	for _, s := range seq {
		if s != "other" {
			own = append(own, s)
		}
	}
	want := []string{"outer.err:Inner", "outer.2", "outer.2.err:InternalError", "outer.3"}
	if !reflect.DeepEqual(own, want) || len(seq) != len(own)+1 {
		t.Fatalf("outcomes %q, want %q and other's step once", seq, want)
	}
	if st := StatsOf(r); st.FramesLive != 0 {
		t.Fatalf("%d frames live after every flow ended (%q)", st.FramesLive, seq)
	}
}
