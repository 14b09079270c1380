package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// testBinding is a binding only this file gives out; the bridge installed
// for it (once per test binary: xSetBridge refuses a second) counts the
// releases of that binding and does nothing else, as no bridge did before.
// It counts too the drops of owned values whose type word is testOwnedP
// (waited_end_owned_test.go), and drops no other value.
var (
	testBinding       byte
	testBindingOnce   sync.Once
	testBindingFreed  atomic.Int32
	testBindingFreedP = unsafe.Pointer(&testBinding)

	testOwnedTyp     byte
	testOwnedP       = unsafe.Pointer(&testOwnedTyp)
	testOwnedDropped atomic.Int32
)

func installTestBridge() {
	testBindingOnce.Do(func() {
		xSetBridge(Bridge{
			Release: func(bin unsafe.Pointer, _ bool) {
				if bin == testBindingFreedP {
					testBindingFreed.Add(1)
				}
			},
			Drop: func(v *Value) {
				if v.typ == testOwnedP {
					testOwnedDropped.Add(1)
				}
			},
		})
	})
}

// TestReleaseDropsRootBinding: a root frame given a binding (xBind, the C
// ABI's) has it released by Release, run or not, and the root that comes
// back from the pool carries none. Release reads the binding only for a
// root marked extKept, so xBind on a root must mark it.
func TestReleaseDropsRootBinding(t *testing.T) {
	SkipIfDebug(t) // released roots are never reused there
	installTestBridge()
	for _, run := range []bool{false, true} {
		r := reactor.NewManual()
		root := New(r)
		if !xBind(root, testBindingFreedP) {
			t.Fatal("xBind refused a new root")
		}
		if run {
			root.Add(emptyStep)
			root.Execute()
			r.RunUntilIdle()
		}
		before := testBindingFreed.Load()
		rt := rootOf(root)
		root.Release()
		if got := testBindingFreed.Load() - before; got != 1 {
			t.Fatalf("run %v: Release released the root's binding %d times, want 1", run, got)
		}
		if rt.bin != nil || rt.extKept {
			t.Fatalf("run %v: a released root kept its binding (%v) or its mark (%v)", run, rt.bin, rt.extKept)
		}
		// A root without a binding releases none.
		other := New(r)
		other.Add(emptyStep)
		other.Execute()
		r.RunUntilIdle()
		before = testBindingFreed.Load()
		other.Release()
		if got := testBindingFreed.Load() - before; got != 0 {
			t.Fatalf("run %v: a root with no binding released %d", run, got)
		}
	}
}
