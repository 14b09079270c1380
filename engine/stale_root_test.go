package engine_test

import (
	"sync"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// A root kept past Release is a misuse, and misuse never
// touches another flow: none of its calls reaches the flow of the next
// owner of the pooled root.
func TestStaleRootCallsDoNotTouchNextOwner(t *testing.T) {
	engine.SkipIfDebug(t)
	r := reactor.NewManual()
	stale := engine.New(r)
	stale.Add(func(as *engine.Steps) {})
	stale.Execute()
	r.RunUntilIdle()
	stale.Release()

	var x engine.External
	owner := engine.New(r)
	owner.Add(func(as *engine.Steps) { x = as.External() })
	p := owner.Promise()
	r.RunUntilIdle()

	calls := []struct {
		name string
		call func()
	}{
		{"Cancel", func() { stale.Cancel() }},
		{"Execute", func() { stale.Execute() }},
		{"Add", func() { stale.Add(func(as *engine.Steps) {}) }},
		{"Parallel.Add", func() { stale.Parallel().Add(func(as *engine.Steps) {}) }},
		{"Release", func() { stale.Release() }},
	}
	for _, c := range calls {
		c.call()
		r.RunUntilIdle()
		if !owner.Executing() || !x.Valid() {
			t.Fatalf("stale root's %s touched the next owner's flow", c.name)
		}
	}
	if stale.Valid() {
		t.Fatal("a released root reports Valid")
	}
	if !x.Success(engine.Int(7)) {
		t.Fatal("the owner's External went stale")
	}
	r.RunUntilIdle()
	args, err := p.Wait()
	if err != nil || args.At(0).Int() != 7 {
		t.Fatalf("owner's flow: %v %v, want success 7", args, err)
	}
	owner.Release()
}

// Ref is exact: whatever reuse of the memory, a Ref taken before Release
// never cancels the next owner.
func TestRefStaleAfterReleaseEvenWhenMemoryReused(t *testing.T) {
	r := reactor.NewManual()
	first := engine.New(r)
	ref := first.Ref()
	if !ref.Valid() {
		t.Fatal("fresh Ref not valid")
	}
	first.Release()
	if ref.Valid() {
		t.Fatal("Ref valid after Release")
	}
	// Draw roots until the same memory comes back, each with a waiting flow.
	var held []*engine.Steps
	var xs []engine.External
	reused := -1
	for i := 0; i < 100 && reused < 0; i++ {
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { xs = append(xs, as.External()) })
		root.Execute()
		r.RunUntilIdle()
		held = append(held, root)
		if root == first {
			reused = i
		}
		if i%2 == 0 { // keep the pool cycling
			root.Cancel()
			r.RunUntilIdle()
			root.Release()
			held = held[:len(held)-1]
			if root == first {
				reused = -1
			}
		}
	}
	if reused < 0 {
		t.Skip("the pool never reused the root's memory")
	}
	if ref.Cancel() {
		t.Fatal("stale Ref.Cancel reported true")
	}
	r.RunUntilIdle()
	if !first.Executing() {
		t.Fatal("stale Ref canceled the next owner of the root")
	}
	for _, h := range held {
		h.Cancel()
	}
	r.RunUntilIdle()
	for _, h := range held {
		h.Release()
	}
}

// A Ref taken through a stale pointer, after Release, is stale from the
// start: it stays invalid once New hands the memory to the next owner, and
// never cancels that owner's flow (the released bit is part of the lease
// word, so the next New does not make it match again).
func TestRefTakenAfterReleaseNeverValid(t *testing.T) {
	engine.SkipIfDebug(t) // the debug build panics at the stale Ref call itself
	r := reactor.NewManual()
	first := engine.New(r)
	first.Release()
	ref := first.Ref()
	if ref.Valid() {
		t.Fatal("Ref taken after Release is valid")
	}
	var held []*engine.Steps
	for i := 0; i < 100; i++ {
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { as.WaitExternal() })
		root.Execute()
		r.RunUntilIdle()
		if root == first {
			if ref.Valid() {
				t.Fatal("stale Ref valid for the next owner of the memory")
			}
			if ref.Cancel() {
				t.Fatal("stale Ref.Cancel reported true for the next owner")
			}
			r.RunUntilIdle()
			if !root.Executing() {
				t.Fatal("stale Ref canceled the next owner of the root")
			}
			held = append(held, root)
			break
		}
		root.Cancel()
		r.RunUntilIdle()
		root.Release()
	}
	if len(held) == 0 {
		t.Skip("the pool never reused the root's memory")
	}
	for _, h := range held {
		h.Cancel()
		r.RunUntilIdle()
		h.Release()
	}
}

// A live Ref cancels like Steps.Cancel.
func TestRefCancelsLiveRoot(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	canceled := false
	root.Add(func(as *engine.Steps) {
		as.SetCancel(func(as *engine.Steps) { canceled = true })
		as.WaitExternal()
	})
	p := root.Promise()
	r.RunUntilIdle()
	if !root.Ref().Cancel() {
		t.Fatal("Ref.Cancel on a running root reported false")
	}
	r.RunUntilIdle()
	if _, err := p.Wait(); err == nil || !canceled {
		t.Fatalf("flow not canceled: %v, handler ran %v", err, canceled)
	}
	root.Release()
}

// The race of the report: cancelling a kept root from another goroutine
// while the loop releases and reuses roots. Run under -race. (A bare
// *Steps cannot tell its next owner from itself once the quarantine has
// cycled, so the goroutine cancels through a Ref, the exact way.)
func TestStaleRootCancelRacesNew(t *testing.T) {
	engine.SkipIfDebug(t)
	r := reactor.NewManual()
	stale := engine.New(r)
	ref := stale.Ref()
	stale.Release()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ref.Cancel()
			_ = stale.Valid()
		}
	}()
	for i := 0; i < 2000; i++ {
		root := engine.New(r)
		done := false
		root.Add(func(as *engine.Steps) { done = true })
		root.Execute()
		r.RunUntilIdle()
		if !done {
			t.Fatalf("round %d: a flow never ran its step", i)
		}
		root.Release()
	}
	close(stop)
	wg.Wait()
}

// Calls on a stale root made while it waits in the pool (state writes,
// steps of every kind, Sync, CopyFrom, Promise) leave nothing for the
// owner that later gets its memory.
func TestStaleRootWritesDoNotReachNextOwnerOfMemory(t *testing.T) {
	engine.SkipIfDebug(t)
	r := reactor.NewManual()
	stale := engine.New(r)
	model := engine.New(r)
	model.Add(func(as *engine.Steps) { t.Error("a step added through a stale root ran") })
	stale.Release()
	stale.Set("k", "stale")
	stale.State().User = "stale"
	stale.Add(func(as *engine.Steps) { t.Error("a step added through a stale root ran") })
	stale.Repeat(2, func(as *engine.Steps, i int) { t.Error("a stale loop ran") })
	stale.Parallel().Add(func(as *engine.Steps) { t.Error("a stale branch ran") })
	stale.SuccessStep(engine.Int(1))
	stale.CopyFrom(model)
	stale.Sync(syncprim.NewMutex(1, 0), func(as *engine.Steps) { t.Error("a stale section ran") }, nil)
	if _, err := stale.Promise().Wait(); err == nil {
		t.Fatal("Promise on a released root succeeded")
	}
	var owner *engine.Steps
	var held []*engine.Steps
	for i := 0; i < 100 && owner == nil; i++ {
		root := engine.New(r)
		if root == stale {
			owner = root
			break
		}
		held = append(held, root)
		if len(held) > 1 {
			held[0].Release()
			held = held[1:]
		}
	}
	if owner == nil {
		t.Skip("the pool never handed the memory out again")
	}
	if owner.Get("k") != nil || owner.State().User != nil {
		t.Fatalf("the next owner sees the stale holder's state: %v %v", owner.Get("k"), owner.State().User)
	}
	ran := false
	owner.Add(func(as *engine.Steps) { ran = true })
	p := owner.Promise()
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil || !ran {
		t.Fatalf("the next owner's flow: %v (its step ran: %v)", err, ran)
	}
	model.Release()
}

// reuseMemory releases root and draws roots from r's pool until one is
// root's memory again (nil if the pool never hands it out in 100 draws).
func reuseMemory(r *reactor.Reactor, root *engine.Steps) *engine.Steps {
	root.Release()
	var held []*engine.Steps
	defer func() {
		for _, h := range held {
			h.Release()
		}
	}()
	for i := 0; i < 100; i++ {
		next := engine.New(r)
		if next == root {
			return next
		}
		held = append(held, next)
		if len(held) > 1 {
			held[0].Release()
			held = held[1:]
		}
	}
	return nil
}

// New and Release skip the State's reset for a root whose State was never
// handed out (stateUsed); these are the cases where it was, one way or
// another, and the next owner of the memory must still find it empty.
func TestStateOfReusedRootIsEmpty(t *testing.T) {
	engine.SkipIfDebug(t)
	t.Run("pointer kept from an earlier lease", func(t *testing.T) {
		// A *State taken in one lease and written through in a later
		// lease whose owner never asked for its State: a misuse, but
		// the write must not outlive that lease (Release resets a State
		// that was ever handed out, whoever holds it now).
		r := reactor.NewManual()
		first := engine.New(r)
		st := first.State()
		second := reuseMemory(r, first)
		if second == nil {
			t.Skip("the pool never handed the memory out again")
		}
		st.User = "stale"
		st.Set("k", 1)
		third := reuseMemory(r, second)
		if third == nil {
			t.Skip("the pool never handed the memory out again")
		}
		if third.State().User != nil || third.Get("k") != nil {
			t.Fatalf("a later owner sees a write made in an earlier lease: %v %v", third.State().User, third.Get("k"))
		}
		third.Release()
	})
	t.Run("written by the engine only", func(t *testing.T) {
		// The flow fails: the engine writes ErrorInfo, LastException and
		// AsyncStack, and nobody asks for the State before Release.
		r := reactor.NewManual()
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { as.Error("Boom", "info") })
		root.Execute()
		r.RunUntilIdle()
		next := reuseMemory(r, root)
		if next == nil {
			t.Skip("the pool never handed the memory out again")
		}
		if st := next.State(); st.ErrorInfo != "" || st.LastException != nil || len(st.AsyncStack) != 0 {
			t.Fatalf("the next owner sees the failed flow's state: %q %v %v", st.ErrorInfo, st.LastException, st.AsyncStack)
		}
		next.Release()
	})
	t.Run("set by a step, on the loop", func(t *testing.T) {
		r := reactor.NewManual()
		var next *engine.Steps
		ran := false
		r.Immediate(func() {
			ran = true
			root := engine.New(r)
			root.Add(func(as *engine.Steps) { as.Set("k", 1); as.State().User = 2 })
			root.Execute()
			r.RunUntilIdle()
			next = reuseMemory(r, root)
			if next == nil {
				return
			}
			if next.Get("k") != nil || next.State().User != nil {
				t.Errorf("the next owner sees the last flow's state: %v %v", next.Get("k"), next.State().User)
			}
			next.Release()
		})
		r.RunUntilIdle()
		if !ran {
			t.Fatal("the loop callback did not run")
		}
		if next == nil {
			t.Skip("the pool never handed the memory out again")
		}
	})
}

// released and handed out again by New before Execute, belongs to its new
// owner: Execute must not start the new owner's flow, and the entry's
// Result is an InternalError, as for a root released and not reused.
func TestBatchAddedRootReleasedAndReused(t *testing.T) {
	r := reactor.NewManual()
	var b engine.Batch
	stale := engine.New(r)
	i := b.Add(stale)
	var filler []*engine.Steps
	for range 32 {
		filler = append(filler, engine.New(r))
	}
	stale.Release()
	for _, s := range filler { // past the free list's quarantine
		s.Release()
	}
	var reused *engine.Steps
	var others []*engine.Steps
	for range 64 {
		s := engine.New(r)
		if s == stale {
			reused = s
			break
		}
		others = append(others, s)
	}
	if reused == nil {
		t.Skip("New did not hand the released root out again")
	}
	ran := false
	reused.Add(func(*engine.Steps) { ran = true })
	b.Execute()
	r.RunUntilIdle()
	b.Wait()
	if ran || reused.Executing() {
		t.Errorf("the Batch ran the new owner's root (ran %v, executing %v)", ran, reused.Executing())
	}
	if _, err := b.Result(i); err == nil {
		t.Error("Result of a root released after Add: nil error, want InternalError")
	} else {
		wantCode(t, err, engine.InternalError)
	}
	reused.Release()
	for _, s := range others {
		s.Release()
	}
}
