package engine

import (
	"unsafe"

	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Root-level steps added before Execute take their frames without an
// allocation once the root (or the reactor) is warm, however many there
// are and whether the root is re-executed or released and taken again.
func TestAllocRootLevelSteps(t *testing.T) {
	SkipIfDebug(t)
	for _, n := range []int{1, 33, 300} {
		r := reactor.NewManual()
		reused := New(r)
		cases := []struct {
			name string
			run  func()
		}{
			{"re-executed", func() {
				for i := 0; i < n; i++ {
					reused.Add(emptyStep)
				}
				reused.Execute()
				r.RunUntilIdle()
			}},
			{"released", func() {
				root := New(r)
				for i := 0; i < n; i++ {
					root.Add(emptyStep)
				}
				root.Execute()
				r.RunUntilIdle()
				root.Release()
			}},
			{"growing", func() {
				// The root is executed with more root-level steps than
				// ever before, each time: frames the reactor holds serve.
				root := New(r)
				root.Add(emptyStep)
				root.Execute()
				r.RunUntilIdle()
				for i := 0; i < n; i++ {
					root.Add(emptyStep)
				}
				root.Execute()
				r.RunUntilIdle()
				root.Release()
			}},
		}
		for _, c := range cases {
			for i := 0; i < 20; i++ {
				c.run()
			}
			if got := testing.AllocsPerRun(50, c.run); got != 0 {
				t.Errorf("%d steps, %s: %v allocs per run, want 0", n, c.name, got)
			}
		}
	}
}

// A root that grows (more root-level steps than it ever had) takes frames
// from the loop's free list when built on the loop, and in doubling
// chunks off the loop: it once took one allocation per step.
func TestAllocRootGrowth(t *testing.T) {
	const n = 33
	r := reactor.NewManual()
	New(r).Release() // warm the engine
	grow := func() {
		root := New(r) // a fresh root: no spare frames
		for i := 0; i < n; i++ {
			root.Add(emptyStep)
		}
		root.Execute()
		r.RunUntilIdle()
	}
	var onLoop, offLoop float64
	r.Immediate(func() {
		grow() // warms the loop's free list
		onLoop = testing.AllocsPerRun(20, grow)
	})
	r.RunUntilIdle()
	offLoop = testing.AllocsPerRun(20, grow)
	t.Logf("allocs per new root with %d steps: on the loop %v, off the loop %v", n, onLoop, offLoop)
	// The root itself is one allocation (it is never released here).
	if onLoop > 1 {
		t.Errorf("on the loop: %v allocs per new root with %d steps, want at most 1 (the root)", onLoop, n)
	}
	// 1, 1, 2, 4, 8, 16: six chunks hold 32 frames, a seventh the 33rd.
	if want := 1 + 7.0; offLoop > want {
		t.Errorf("off the loop: %v allocs per new root with %d steps, want at most %v", offLoop, n, want)
	}
	if st := StatsOf(r); st.FramesLive != 0 {
		t.Errorf("FramesLive = %d after every flow ended", st.FramesLive)
	}
}

// A root that is never Released (plain New ... Execute, dropped after) is
// one allocation, the root itself, whether it is built off the loop (its
// first frame comes from the engine's build pool) or on it, and the
// frames it used go back to the reactor, not to the GC.
func TestAllocUnreleasedRoot(t *testing.T) {
	r := reactor.NewManual()
	plain := func() {
		root := New(r)
		root.Add(emptyStep)
		root.Execute()
		r.RunUntilIdle()
	}
	for i := 0; i < 3*buildRefill; i++ {
		plain() // warms the build pool and the loop's free list
	}
	if got := testing.AllocsPerRun(4*buildRefill, plain); got != 1 {
		t.Errorf("off the loop: %v allocs per unreleased root, want 1 (the root)", got)
	}
	var onLoop float64
	r.Immediate(func() { onLoop = testing.AllocsPerRun(4*buildRefill, plain) })
	r.RunUntilIdle()
	if onLoop != 1 {
		t.Errorf("on the loop: %v allocs per unreleased root, want 1 (the root)", onLoop)
	}
	if st := StatsOf(r); st.FramesLive != 0 {
		t.Errorf("FramesLive = %d after every flow ended", st.FramesLive)
	}
	// The state of a dropped-after-use root stays readable after its end,
	// and the root can run again: its frames were not lost with the pool.
	root := New(r)
	root.Add(func(as *Steps) { as.State().Set("k", 1) })
	root.Execute()
	r.RunUntilIdle()
	root.Add(func(as *Steps) { as.State().Set("k", as.State().Get("k").(int)+1) })
	root.Execute()
	r.RunUntilIdle()
	if got := root.State().Get("k"); got != 2 {
		t.Errorf("state after two runs = %v, want 2", got)
	}
}

// The root is the one allocation of a root never Released: it is kept
// within the 288-byte size class (rarely used fields live in rootExt). A
// field added to it should move something else out, or say why here.
func TestRootSize(t *testing.T) {
	if got := unsafe.Sizeof(root{}); got > 288 {
		t.Errorf("root is %d bytes, want at most 288 (one size class: see rootExt)", got)
	}
}

// RunReady reads a root's run word and its more pointer for every flow it
// runs, and the step path spareN/spareCap for every step that ends, after
// a round over many parked flows has evicted the root: the four must share
// one cache line wherever the 288-byte size class places the root (at
// offset 0 or 32 of a line), so they lie within 32 bytes that start at a
// multiple of 32.
func TestRootHotFieldsOneLine(t *testing.T) {
	var rt root
	lo := unsafe.Offsetof(rt.run)
	hi := unsafe.Offsetof(rt.spareCap) + unsafe.Sizeof(rt.spareCap)
	for _, off := range []uintptr{unsafe.Offsetof(rt.more), unsafe.Offsetof(rt.spareN), unsafe.Offsetof(rt.spareCap)} {
		if off < lo || off >= hi {
			t.Errorf("root field at %d outside run..spareCap [%d, %d)", off, lo, hi)
		}
	}
	if lo%32+(hi-lo) > 32 {
		t.Errorf("root.run..spareCap span [%d, %d): want it within 32 bytes from a multiple of 32 (one cache line)", lo, hi)
	}
}

// New off the loop (keepFlow, stateUsed, lease), Add (built), the start
// (started, created, built), the run's end (started, argsClear,
// releaseAtEnd) and Release (run, lease, extKept, stateUsed, argsClear)
// touch the root's flag bytes beside lease, and a fan-out meets each root
// cold: the flags, the build counts, releaseAtEnd and lease must share one
// cache line wherever the 288-byte size class places the root (at offset 0
// or 32 of a line), and at offset 32 that line must be run's and spare's
// too.
func TestRootFlagsBesideLease(t *testing.T) {
	var rt root
	fields := map[string]uintptr{
		"lease":        unsafe.Offsetof(rt.lease),
		"releaseAtEnd": unsafe.Offsetof(rt.releaseAtEnd),
		"keepFlow":     unsafe.Offsetof(rt.keepFlow),
		"started":      unsafe.Offsetof(rt.started),
		"stateUsed":    unsafe.Offsetof(rt.stateUsed),
		"argsClear":    unsafe.Offsetof(rt.argsClear),
		"extKept":      unsafe.Offsetof(rt.extKept),
		"built":        unsafe.Offsetof(rt.built),
		"created":      unsafe.Offsetof(rt.created),
	}
	for _, base := range []uintptr{0, 32} {
		line := (base + unsafe.Offsetof(rt.lease)) / 64
		for name, off := range fields {
			if (base+off)/64 != line {
				t.Errorf("root placed at offset %d of a line: %s (byte %d) is not on lease's line", base, name, off)
			}
		}
		if base == 32 && ((base+unsafe.Offsetof(rt.run))/64 != line || (base+unsafe.Offsetof(rt.spare))/64 != line) {
			t.Errorf("root placed at offset 32 of a line: run or spare is not on lease's line")
		}
	}
}
