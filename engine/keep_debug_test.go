//go:build asyncsteps_debug

package engine

import (
	"strings"
	"testing"
	"unsafe"
)

// In the asyncsteps_debug build, keep checks the kept frame's contract
// (frame.go: nothing queued, armed, timed, bound or allocated, no cancel
// or error handler, no AddWith value): a path that keeps a frame on a
// flag's word (fBare: advanceFast, advance, run's actDone case) while a
// writer of that state forgot to clear the flag panics there, instead of
// leaving the state to the next iteration's step.
func TestDebugKeepChecksTheKeptFrame(t *testing.T) {
	cases := keptFrameStates()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &Steps{kind: kBody}
			f := &Steps{kind: kStep, parent: p, flags: fBare}
			tc.set(f)
			defer func() {
				v := recover()
				if s, _ := v.(string); !strings.Contains(s, "keep") {
					t.Fatalf("keep of a frame holding a %s: recovered %v, want a panic naming keep", tc.name, v)
				}
			}()
			p.keep(f)
		})
	}
	// A frame that holds nothing is kept quietly.
	p := &Steps{kind: kBody}
	f := &Steps{kind: kStep, parent: p, flags: fBare | fWait | fArmed}
	p.keep(f)
	if p.next != f || f.flags != 0 || f.st != stFree {
		t.Fatal("a frame holding nothing was not kept")
	}
}

// keptFrameStates is the state a kept or spare frame must not hold
// (frame.go's kept-frame contract), one case a writer of it, for the
// debug checks of keep and toSpare.
func keptFrameStates() []struct {
	name string
	set  func(f *Steps)
} {
	v := new(int)
	return []struct {
		name string
		set  func(f *Steps)
	}{
		{"cancel handler", func(f *Steps) { f.oncancel = func(*Steps) {} }},
		{"error handler", func(f *Steps) { f.onerr = func(*Steps, string) {} }},
		{"AddWith value", func(f *Steps) { f.x = unsafe.Pointer(v) }},
		{"AddWith function", func(f *Steps) { f.xfn = unsafe.Pointer(v) }},
		{"binding", func(f *Steps) { f.bin = unsafe.Pointer(v) }},
		{"timer", func(f *Steps) { f.tidx = 1 }},
		{"queued sub-step", func(f *Steps) { f.qlast = f }},
		{"armed External", func(f *Steps) { f.ctl.Store(1<<xBits | xArmed) }},
	}
}
