//go:build asyncsteps_debug

package engine

import (
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// In the asyncsteps_debug build, toSpare checks a bare frame (fBare) as
// keep does: it leaves a bare frame's second line as it finds it, and the
// next root-level Add that takes the frame from the spare list (Add's
// root path, which gives the step its fn alone) runs with whatever it
// holds, a stale error handler or AddWith value, or leaks its Stack
// memory. A writer of that state that forgot to clear fBare panics here,
// naming what the frame holds.
func TestDebugToSpareChecksBareFrame(t *testing.T) {
	cases := keptFrameStates()
	root := New(reactor.NewManual())
	rt := rootOf(root)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &Steps{e: rt.e, kind: kStep, parent: root, flags: fBuilt | fBare}
			tc.set(f)
			defer func() {
				v := recover()
				if s, _ := v.(string); !strings.Contains(s, "toSpare") {
					t.Fatalf("toSpare of a bare frame holding a %s: recovered %v, want a panic naming toSpare", tc.name, v)
				}
			}()
			rt.e.toSpare(rt, f)
		})
	}
	// A bare frame that holds nothing goes to the spares quietly.
	f := &Steps{e: rt.e, kind: kStep, parent: root, flags: fBuilt | fBare}
	n := rt.spareN
	rt.e.toSpare(rt, f)
	if rt.spare != f || rt.spareN != n+1 || f.flags != 0 || f.st != stFree {
		t.Fatal("a bare frame holding nothing was not taken as a spare")
	}
	root.Release()
}
