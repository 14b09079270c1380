package abi_test

import (
	"runtime"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/asyncsteps/asyncsteps/abi/internal/ctest"
	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Regressions found in the abi change, each kept as its reproduction.

// TestLoopBodyErrorThenBreak: a C loop body calls handle_error, then
// breakLoop. The contract makes the second call a misuse (InternalError);
// at the least the error must not be lost. v_break goes to Go without
// checking ended(), Break raises, and apply then skips the recorded error
// because engine.Raised: the loop just breaks and the flow succeeds.
func TestLoopBodyErrorThenBreak(t *testing.T) {
	h := newHarness(t)
	ctest.RvReset()
	ctest.RvAdd(h.root, ctest.RvErrBreak, 0)
	_, code := h.run()
	if code == "" {
		t.Fatalf("handle_error then breakLoop in a C loop body: the flow succeeded (body ran %d times); want RvErr or InternalError", ctest.RvBodyRuns())
	}
	h.release()
}

// TestLoopBodyErrorThenContinue: the same with continueLoop: the loop runs
// all its rounds and the flow succeeds.
func TestLoopBodyErrorThenContinue(t *testing.T) {
	h := newHarness(t)
	ctest.RvReset()
	ctest.RvAdd(h.root, ctest.RvErrContinue, 0)
	_, code := h.run()
	if code == "" {
		t.Fatalf("handle_error then continueLoop: the flow succeeded (body ran %d times); want RvErr or InternalError", ctest.RvBodyRuns())
	}
	h.release()
}

// TestPassThroughTwiceCleanup: a C step passes on the owned value it
// received, then calls success again (a misuse). apply's misuse branch
// runs dropAll on the recorded values, which still include the value the
// flow's arguments own: its cleanup runs there and again when the flow
// drops its arguments (a double free of the payload in real code).
func TestPassThroughTwiceCleanup(t *testing.T) {
	h := newHarness(t)
	ctest.RvReset()
	ctest.Add(h.root, ctest.Owned, 1, 0)
	ctest.RvAdd(h.root, ctest.RvPassTwice, 0)
	_, code := h.run()
	if code != engine.InternalError {
		t.Fatalf("flow ended with %q, want InternalError", code)
	}
	h.release()
	if c := ctest.Count().ValueCleanups; c != 1 {
		t.Fatalf("the owned value's cleanup ran %d times, want exactly once", c)
	}
}

// TestPassThroughThenFailCleanup: success(passed-on owned value) then
// handle_error: the error branch of apply drops the values too.
func TestPassThroughThenFailCleanup(t *testing.T) {
	h := newHarness(t)
	ctest.RvReset()
	ctest.Add(h.root, ctest.Owned, 1, 0)
	ctest.RvAdd(h.root, ctest.RvPassFail, 0)
	_, code := h.run()
	if code == "" {
		t.Fatalf("flow succeeded after handle_error")
	}
	h.release()
	if c := ctest.Count().ValueCleanups; c != 1 {
		t.Fatalf("the owned value's cleanup ran %d times, want exactly once", c)
	}
}

// TestStaleExternalLeaksOwned: a C step set a timeout (armed: its
// External is in the image); it timed out and its error handler added a
// sub-step, so the step (and its image) live on. A late success from C,
// with owned values, goes to external(b), which returns the stale External;
// x.Success returns false and nobody runs the values' cleanups.
func TestStaleExternalLeaksOwned(t *testing.T) {
	h := newHarness(t)
	ctest.RvReset()
	ctest.RvAdd(h.root, ctest.RvWaitTimeout, 5)
	h.start()
	h.r.Advance(10 * time.Millisecond)
	h.r.RunUntilIdle()
	if !ctest.Waiting() || ctest.RvKept() == nil {
		t.Fatal("the handler's sub-step is not waiting")
	}
	ctest.CompleteOwnedOn(ctest.RvKept()) // late: the step timed out
	h.r.RunUntilIdle()
	ctest.CompleteWaiting(1)
	h.r.RunUntilIdle()
	if _, code := h.result(); code != "" {
		t.Fatalf("flow ended with %q", code)
	}
	h.release()
	if c := ctest.Count().ValueCleanups; c != 2 {
		t.Fatalf("cleanups of the two owned values of a late success: %d, want 2 (the values leaked)", c)
	}
}

// TestExternalRaceWithTimeout (run with -race; deterministic): a C
// step armed with setTimeout timed out, and its error handler added a
// waiting sub-step, so its image lives on. Another goroutine completes the
// timed-out step late (external(b) hands it &g.extV; the stale External's
// CAS fails, nothing is posted). When the sub-step ends the loop releases
// the image and writes g.extV = engine.External{} (image.go releaseImage)
// with no synchronisation with that reader: a data race on Go memory. The
// same write happens in arm() when the image is reused.
func TestExternalRaceWithTimeout(t *testing.T) {
	h := newHarness(t)
	ctest.RvReset()
	ctest.RvFlagClear()
	ctest.RvAddWaitGo(h.root, 5)
	h.start()
	h.r.Advance(10 * time.Millisecond)
	h.r.RunUntilIdle()
	kept := ctest.RvKept()
	if kept == nil || !ctest.RvExt.Valid() {
		t.Fatal("the handler's Go sub-step is not waiting")
	}
	// Late, from another thread. No channel: any synchronisation (and, in
	// race mode, any cgo call on this goroutine) would order the two.
	finished := make(chan struct{})
	go func() { ctest.RvCompleteFlag(kept); close(finished) }()
	time.Sleep(100 * time.Millisecond) // not a synchronisation: lets the two overlap
	ctest.RvExt.Success()              // pure Go: the loop then releases the C step's image
	h.r.RunUntilIdle()
	if _, code := h.result(); code != "" {
		t.Fatalf("flow ended with %q", code)
	}
	h.release()
	<-finished
	if !ctest.RvFlag() {
		t.Fatal("the late completion did not return")
	}
}

// TestIsValidRace (run with -race): isValid from another thread on a
// waiting C step's bsi (what a worker asks before completing it) reads
// imageGo.steps (asxGoIsValid: engine.IsRoot(g.steps)) while the loop's
// releaseImage writes it when the step times out.
func TestIsValidRace(t *testing.T) {
	r, err := reactor.New(reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	go r.Run()
	defer r.Close()
	for i := 0; i < 100; i++ {
		ctest.Reset()
		built := make(chan *engine.Steps)
		var p *engine.Promise
		r.Immediate(func() {
			root := engine.New(r)
			ctest.Add(root, ctest.Timeout, 1, 0)
			p = root.Promise()
			built <- root
		})
		root := <-built
		running := func() bool {
			select {
			case <-p.Done():
				return false
			default:
				return true
			}
		}
		// The step may time out before this goroutine sees it wait (slow
		// under -race): every wait below ends with the flow.
		var bsi unsafe.Pointer
		for bsi = ctest.WaitingPtr(); bsi == nil && running(); bsi = ctest.WaitingPtr() {
			runtime.Gosched()
		}
		for bsi != nil && ctest.RvIsValid(bsi) && running() {
		}
		<-p.Done()
		done := make(chan struct{})
		r.Immediate(func() { root.Release(); close(done) })
		<-done
	}
}

// TestNestedDriveLosesOuterSuccess: a C callback records
// success(555) and then drives its own manual reactor (reactor.enter
// allows "a callback driving its own manual reactor", and abi's
// pool.record keeps a depth of scratches for exactly this). A flow run
// inside ends; the outer step's success is then lost: its successor gets
// no value. Root cause is in the engine (exec/drive1 set e.cur = nil after
// the nested step and never restore the outer one, so the outer Success is
// ignored); TestNestedDriveGo shows the same with Go steps only.
// abi's record() also forgets the outer recorder when a nested callback's
// finish unwinds (p.end skipped), lending depth 0 again.
func TestNestedDriveLosesOuterSuccess(t *testing.T) {
	h := newHarness(t)
	other := engine.New(h.r)
	ctest.Add(other, ctest.Fail, 1, ctest.EHRecover)
	ctest.RvAddOuter(h.root)
	var got engine.Value
	h.root.Add(func(as *engine.Steps) { got = as.Arg(0) })
	ran := false
	ctest.RvHook = func() {
		ran = true
		other.Execute()
		h.r.RunUntilIdle()
	}
	defer func() { ctest.RvHook = nil }()
	_, code := h.run()
	if !ran {
		t.Fatal("the hook did not run")
	}
	if code != "" {
		t.Fatalf("flow ended with %q", code)
	}
	if got.Kind() != engine.KindInt || got.Int() != 555 {
		t.Fatalf("the step after the outer C step got %v, want Int 555: its success was lost across the nested drive", got)
	}
	other.Release()
	h.release()
}

// TestNestedDriveGo: the same with Go steps only (engine).
func TestNestedDriveGo(t *testing.T) {
	h := newHarness(t)
	other := engine.New(h.r)
	other.Add(func(as *engine.Steps) { as.Success(engine.Int(1)) })
	h.root.Add(func(as *engine.Steps) {
		other.Execute()
		h.r.RunUntilIdle() // a callback driving its own manual reactor
		as.Success(engine.Int(555))
	})
	var got engine.Value
	h.root.Add(func(as *engine.Steps) { got = as.Arg(0) })
	if _, code := h.run(); code != "" {
		t.Fatalf("flow ended with %q", code)
	}
	if got.Kind() != engine.KindInt || got.Int() != 555 {
		t.Fatalf("after a nested drive the step's Success(555) was ignored: the next step got %v", got)
	}
	other.Release()
	h.release()
}

// TestPassedOnPrefix: a C step passes on the Go string it received
// with a shorter length (a zero-copy prefix). outArgs maps a descriptor
// back to the received Value by data address and kind only, not length,
// so the next step gets the whole string instead of the prefix.
func TestPassedOnPrefix(t *testing.T) {
	h := newHarness(t)
	h.root.Add(func(as *engine.Steps) { as.Success(engine.Str("hello, world, a long enough string")) })
	ctest.RvAddTrim(h.root)
	var got string
	h.root.Add(func(as *engine.Steps) { got = as.Arg(0).Str() })
	if _, code := h.run(); code != "" {
		t.Fatalf("flow ended with %q", code)
	}
	if got != "hel" {
		t.Fatalf("the C step passed on a 3-byte prefix; the next step got %q", got)
	}
	h.release()
}

// collectedAfter runs build, which returns a weak pointer to memory only
// a Go callback handed to the foreign engine references, and reports
// whether that memory was collected after the flow was freed.
func foreignCollected(t *testing.T, build func(root *engine.Steps) weak.Pointer[[1024]byte]) bool {
	f := newForeign(t)
	wp := build(f.root)
	f.run()
	f.free()
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	return wp.Value() == nil
}

// TestWrapParallelHandleLeak: Parallel(onerror) on a foreign
// accessor makes a cgo.Handle for the error handler (wrap.go Parallel)
// that nothing ever deletes: the handler, and all it references, live for
// the life of the process, per call.
func TestWrapParallelHandleLeak(t *testing.T) {
	if !foreignCollected(t, func(root *engine.Steps) weak.Pointer[[1024]byte] {
		big := new([1024]byte)
		wp := weak.Make(big)
		root.Add(func(as *engine.Steps) {
			p := as.Parallel(func(as *engine.Steps, code string) { _ = big[0] })
			p.Add(func(as *engine.Steps) {})
		})
		return wp
	}) {
		t.Fatal("the error handler given to Parallel on a foreign accessor was never released (cgo.Handle leaked)")
	}
}

// TestWrapUnrunStepHandleLeak: a Go step added to a foreign flow is
// a cgo.Handle deleted through asx_f_keep, which only its execute
// trampoline calls: a step that never runs (an earlier step failed) keeps
// its handle, and its closure, forever.
func TestWrapUnrunStepHandleLeak(t *testing.T) {
	if !foreignCollected(t, func(root *engine.Steps) weak.Pointer[[1024]byte] {
		big := new([1024]byte)
		wp := weak.Make(big)
		root.Add(func(as *engine.Steps) { as.Error("Stop") })
		root.Add(func(as *engine.Steps) { _ = big[0] })
		return wp
	}) {
		t.Fatal("a Go step of a foreign flow that never ran was never released (cgo.Handle leaked)")
	}
}

// TestWrapControl: the same build whose step does run is released
// (the two tests above are not artefacts of the harness).
func TestWrapControl(t *testing.T) {
	if !foreignCollected(t, func(root *engine.Steps) weak.Pointer[[1024]byte] {
		big := new([1024]byte)
		wp := weak.Make(big)
		root.Add(func(as *engine.Steps) { _ = big[0] })
		return wp
	}) {
		t.Fatal("control: a Go step that ran was not released")
	}
}
