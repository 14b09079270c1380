package abi_test

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/abi"
	"github.com/asyncsteps/asyncsteps/abi/internal/ctest"
	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Chains (chain.go): C steps that a C step added run back to back in C.
// Each case below runs a flow twice, with chains and without them, and
// the two runs must agree on everything a program sees: the C log, the
// flow's result or error, the counters of cleanups and cancels. With
// chains, the chain must also have run where the case says it does.

// outcome is what one run of a chain case showed.
type outcome struct {
	Log     []int
	Vals    string
	Code    string
	Counts  ctest.Counters
	Handler string // the code the last C error handler got
}

type chainCase struct {
	name  string
	items []ctest.Item // what the AddList step adds
	eh    ctest.Handler
	// drive runs the flow after start (nil: nothing more), on the
	// harness's loop; the flow must have ended when it returns.
	drive func(h *harness)
	// build adds the flow to root (nil: one AddList step with eh).
	build func(root *engine.Steps, eh ctest.Handler)
	// goCall is ctest.GoCall for the run (nil: none).
	goCall func(h *harness, bsi unsafe.Pointer, data int)
	// chained: the least number of callbacks chains must have run.
	chained uint64
}

func runChainCase(t *testing.T, c chainCase, off bool) outcome {
	t.Helper()
	abi.SetChainsOff(off)
	defer abi.SetChainsOff(false)
	h := newHarness(t)
	ctest.SetList(c.items...)
	ctest.SetLoopControl(-1, -1)
	if c.goCall != nil {
		ctest.GoCall = func(bsi unsafe.Pointer, data int) { c.goCall(h, bsi, data) }
		defer func() { ctest.GoCall = nil }()
	}
	_, before := abi.ChainCounts(h.root)
	if c.build != nil {
		c.build(h.root, c.eh)
	} else {
		ctest.Add(h.root, ctest.AddList, 0, c.eh)
	}
	h.start()
	if c.drive != nil {
		c.drive(h)
	}
	vals, code := h.result()
	_, after := abi.ChainCounts(h.root)
	h.release()
	if !off && after-before < c.chained {
		t.Errorf("chains ran %d callbacks, want at least %d", after-before, c.chained)
	}
	if off && after != before {
		t.Errorf("chains ran %d callbacks while off", after-before)
	}
	return outcome{Log: ctest.Log(), Vals: fmt.Sprint(vals), Code: code, Counts: ctest.Count(), Handler: ctest.Code()}
}

func it(s ctest.Step, data int) ctest.Item { return ctest.Item{Step: s, Data: data} }

func itEH(s ctest.Step, data int, eh ctest.Handler) ctest.Item {
	return ctest.Item{Step: s, Data: data, EH: eh}
}

func TestChainSameAsEngine(t *testing.T) {
	cases := []chainCase{
		{name: "plain steps and values", chained: 5,
			items: []ctest.Item{it(ctest.Record, 1), it(ctest.Inc, 0), it(ctest.Inc, 0), it(ctest.Mark, 2), it(ctest.Inc, 0)}},
		{name: "values passed on", chained: 3,
			items: []ctest.Item{it(ctest.SucceedArg, 7), it(ctest.Record, 1), it(ctest.Inc, 0)}},
		{name: "error with the step's own handler", chained: 2,
			items: []ctest.Item{it(ctest.Inc, 0), itEH(ctest.Fail, 5, ctest.EHRecover), it(ctest.Inc, 0), it(ctest.Record, 6)}},
		{name: "error to the adding step's handler", eh: ctest.EHRecord, chained: 2,
			items: []ctest.Item{it(ctest.Inc, 0), it(ctest.Fail, 5), it(ctest.Mark, 6)}},
		{name: "error rethrown by a handler", eh: ctest.EHRecover, chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), itEH(ctest.Fail, 5, ctest.EHRethrow), it(ctest.Mark, 6)}},
		{name: "a step adds a Go step", chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), it(ctest.GoAdd, 10), it(ctest.Inc, 0)}},
		{name: "a step adds C sub-steps", chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), it(ctest.AddSubs, 3), it(ctest.Inc, 0)}},
		{name: "a step waits", chained: 2,
			items: []ctest.Item{it(ctest.Inc, 0), it(ctest.Wait, 7), it(ctest.Inc, 0)},
			drive: func(h *harness) {
				if !ctest.Waiting() {
					h.t.Fatal("the Wait step does not wait")
				}
				ctest.CompleteWaiting(41)
				h.r.RunUntilIdle()
			}},
		{name: "a step's timeout fires", chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), itEH(ctest.Timeout, 5, ctest.EHRecord), it(ctest.Mark, 3)},
			drive: func(h *harness) {
				h.r.Advance(4 * 1e6)
				if h.ended() {
					h.t.Fatal("ended before its timeout")
				}
				h.r.Advance(2 * 1e6)
			}},
		{name: "a step runs a parallel", eh: ctest.EHRecord, chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), it(ctest.Parallel, 20), it(ctest.Mark, 3)}},
		{name: "a step repeats", chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), it(ctest.Repeat, 3), it(ctest.Mark, 3)}},
		{name: "a step loops", chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), it(ctest.Loop, 2), it(ctest.Mark, 3)}},
		{name: "a step reads a state variable", chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), it(ctest.StateStep, 0), it(ctest.Record, 3)}},
		{name: "stack memory", chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), it(ctest.StackStep, 0), it(ctest.Mark, 3)}},
		{name: "owned values", chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), it(ctest.Owned, 2), it(ctest.Mark, 3), it(ctest.Record, 4)}},
		{name: "success twice", chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), it(ctest.MisuseSuccessTwice, 0), it(ctest.Mark, 3)}},
		{name: "a pointer kept past its step", chained: 2,
			items: []ctest.Item{it(ctest.MisuseKeep, 0), it(ctest.MisuseUseKept, 0), it(ctest.Mark, 3)}},
		{name: "a Go call cancels the flow", chained: 2,
			items:  []ctest.Item{it(ctest.Mark, 1), it(ctest.CallGo, 5), it(ctest.Mark, 3)},
			goCall: func(h *harness, _ unsafe.Pointer, _ int) { h.root.Cancel() }},
		{name: "a Go call adds through Wrap", chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), it(ctest.CallGo, 5), it(ctest.Inc, 3)},
			goCall: func(h *harness, bsi unsafe.Pointer, _ int) {
				as := abi.Wrap(bsi)
				as.Add(func(as *engine.Steps) { ctest.Push(500); as.Success(engine.Int(9), engine.Int(10)) })
			}},
		{name: "a Go call fails the step", eh: ctest.EHRecord, chained: 2,
			items:  []ctest.Item{it(ctest.Mark, 1), it(ctest.CallGo, 5), it(ctest.Mark, 3)},
			goCall: func(h *harness, bsi unsafe.Pointer, _ int) { abi.Wrap(bsi).Error("GoFailed", "from Go") }},
		{name: "canceled from another goroutine while a chain step waits", chained: 2,
			items: []ctest.Item{it(ctest.Mark, 1), it(ctest.Wait, 7), it(ctest.Mark, 3)},
			drive: func(h *harness) {
				done := make(chan struct{})
				go func() { h.root.Cancel(); close(done) }()
				<-done
				h.r.RunUntilIdle()
			}},
		{name: "in a loop", chained: 6,
			items: []ctest.Item{it(ctest.Inc, 0), it(ctest.Inc, 0), it(ctest.Record, 8)},
			build: func(root *engine.Steps, eh ctest.Handler) {
				n := 0
				root.Loop(func(as *engine.Steps) {
					if n++; n > 3 {
						as.Break()
					}
					ctest.Add(as, ctest.AddList, 0, eh)
				})
			}},
		{name: "in a loop, a chain step breaks it", chained: 2,
			items:  []ctest.Item{it(ctest.Mark, 1), it(ctest.CallGo, 5), it(ctest.Mark, 3)},
			goCall: func(h *harness, bsi unsafe.Pointer, _ int) { abi.Wrap(bsi).Break() },
			build: func(root *engine.Steps, eh ctest.Handler) {
				root.Loop(func(as *engine.Steps) { ctest.Add(as, ctest.AddList, 0, eh) })
			}},
		{name: "in parallel branches", chained: 6,
			items: []ctest.Item{it(ctest.Inc, 0), it(ctest.Record, 8), it(ctest.Inc, 0)},
			build: func(root *engine.Steps, eh ctest.Handler) {
				p := root.Parallel(nil)
				for i := 0; i < 2; i++ {
					p.Add(func(as *engine.Steps) { ctest.Add(as, ctest.AddList, 0, eh) })
				}
			}},
		{name: "in parallel branches, one fails", chained: 2,
			items: []ctest.Item{it(ctest.Record, 1), it(ctest.Fail, 2), it(ctest.Record, 3)},
			build: func(root *engine.Steps, eh ctest.Handler) {
				p := root.Parallel(nil)
				p.Add(func(as *engine.Steps) { ctest.Add(as, ctest.AddList, 0, eh) })
				p.Add(func(as *engine.Steps) { ctest.Add(as, ctest.Wait, 70, 0) })
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := runChainCase(t, c, true)
			got := runChainCase(t, c, false)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("with chains:\n  %+v\nwithout:\n  %+v", got, want)
			}
		})
	}
}

// TestChainLong: chains over more steps than ASX_RING images, up to the
// turn budget (the engine yields in the middle and goes on from the entered
// step in the next turn), with the values carried through every step.
func TestChainLong(t *testing.T) {
	for _, n := range []int{1, 2, 255, 256, 257, 4095, 4096, 4097, 10000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			h := newHarness(t)
			ctest.Add(h.root, ctest.SpawnInc, n, 0)
			vals, code := h.run()
			if code != "" || len(vals) != 2 || vals[0].Int() != int64(n) || vals[1].Int() != int64(n) {
				t.Fatalf("result %v %q, want [%d %d]", vals, code, n, n)
			}
			// Over ASX_ADDS (4096) adds, Go takes them as engine steps
			// while the callback still runs: no chain then.
			if _, steps := abi.ChainCounts(h.root); (steps == 0) != (n > 4096) {
				t.Errorf("chains ran %d callbacks", steps)
			}
			h.release()
		})
	}
}

// TestChainYields: a chain takes its steps from the flow's turn budget, so
// another flow's step runs after as many of a long chain's steps as it does
// when the engine runs them.
func TestChainYields(t *testing.T) {
	const n = 4096 // the most a chain takes at once (ASX_ADDS)
	var seen [2]int
	for i, off := range []bool{true, false} {
		abi.SetChainsOff(off)
		ctest.Reset()
		r := reactor.NewManual()
		a, b := engine.New(r), engine.New(r)
		ctest.Add(a, ctest.SpawnInc, n, 0)
		b.Add(func(as *engine.Steps) {})
		b.Add(func(as *engine.Steps) { seen[i], _ = ctest.IncSeen() })
		pa, pb := a.Promise(), b.Promise()
		r.RunUntilIdle()
		abi.SetChainsOff(false)
		if _, err := pa.Wait(); err != nil {
			t.Fatal(err)
		}
		if _, err := pb.Wait(); err != nil {
			t.Fatal(err)
		}
		if !off {
			if _, steps := abi.ChainCounts(a); steps == 0 {
				t.Error("no chain ran")
			}
		}
		a.Release()
		b.Release()
	}
	if seen[0] != seen[1] || seen[0] <= 0 || seen[0] >= n {
		t.Errorf("the other flow's step ran after %d of the C steps without chains, %d with; want the same, between 0 and %d", seen[0], seen[1], n)
	}
}

// TestChainAllocs: a warm chain allocates nothing.
func TestChainAllocs(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	run := func() {
		ctest.Add(root, ctest.SpawnInc, 1024, 0)
		root.Execute()
		r.RunUntilIdle()
	}
	run()
	if n := testing.AllocsPerRun(20, run); n != 0 {
		t.Errorf("%v allocations per chain of 1024 C steps, want 0", n)
	}
	root.Release()
}
