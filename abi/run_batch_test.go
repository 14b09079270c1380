package abi_test

import (
	"reflect"
	"testing"

	"github.com/asyncsteps/asyncsteps/abi/internal/ctest"
	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// C flows in one batch of the engine's RunReady (runBatch: one recover for
// the batch): a C step that raises (handle_error) in the middle flow stops
// the batch at that flow, which unwinds to its C handler and goes on, and
// the flows after it run once, in order, in the same batch; each flow's
// outcome is its own.
func TestCRaiseMidBatch(t *testing.T) {
	ctest.Reset()
	r := reactor.NewManual()
	a, b, c := engine.New(r), engine.New(r), engine.New(r)
	ctest.Add(a, ctest.Mark, 1, ctest.NoHandler)
	ctest.Add(a, ctest.Mark, 2, ctest.NoHandler)
	ctest.Add(b, ctest.Fail, 10, ctest.EHRecover)
	ctest.Add(b, ctest.Mark, 11, ctest.NoHandler)
	ctest.Add(c, ctest.Fail, 20, ctest.EHRecord)
	ctest.Add(c, ctest.Mark, 21, ctest.NoHandler)
	var pa, pb, pc *engine.Promise
	var inBatch []int
	r.Immediate(func() {
		pa, pb, pc = a.Promise(), b.Promise(), c.Promise()
		engine.RunReady(r) // the three in one batch
		inBatch = ctest.Log()
	})
	r.RunUntilIdle()
	// Each flow runs its turn to its end before the next (no yields: far
	// under the budget), all inside the one RunReady.
	want := []int{1, 2, 10, -2, 11, 20, -1}
	if !reflect.DeepEqual(inBatch, want) {
		t.Fatalf("C log after the batch %v, want %v", inBatch, want)
	}
	if got := ctest.Log(); !reflect.DeepEqual(got, want) {
		t.Fatalf("C log %v, want %v (nothing more after the batch)", got, want)
	}
	for i, c := range []struct {
		p    *engine.Promise
		code string
	}{{pa, ""}, {pb, ""}, {pc, "CError"}} {
		select {
		case <-c.p.Done():
		default:
			t.Fatalf("flow %d has not ended", i)
		}
		if _, err := c.p.Wait(); (err == nil) != (c.code == "") {
			t.Fatalf("flow %d: result error %v, want code %q", i, err, c.code)
		}
	}
	if st := engine.StatsOf(r); st.FramesLive != 0 {
		t.Fatalf("%d frames live after every flow ended", st.FramesLive)
	}
}
