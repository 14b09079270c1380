package engine_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Add on a root that is executing, from a goroutine that is not the loop,
// is a misuse that must do nothing. Add's fast path must not read the
// root's spare frames (loop-owned while it runs) before it has seen that
// the root is not running: the loop gives the finished sub-step's frame
// back to the root while the misuse runs (a data race under -race, and
// the frames given back meanwhile lost if the run ends between the reads).
func TestAddOnExecutingRootOffLoop(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	noop := func(*engine.Steps) {}
	for range 2 { // a re-executed root keeps spare frames (spareCap)
		root.Add(noop).Add(noop)
		root.Execute()
		r.RunUntilIdle()
	}
	started, added := make(chan struct{}), make(chan struct{})
	go func() {
		<-started
		root.Add(noop) // executing: a misuse, dropped
		close(added)
	}()
	var ext engine.External
	root.Add(func(as *engine.Steps) {
		close(started)
		as.Add(noop) // its frame goes back to root's spares meanwhile
	})
	root.Add(func(as *engine.Steps) { ext = as.External() })
	p := root.Promise()
	r.RunUntilIdle()
	<-added
	ext.Success()
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantNoErr(t, err)
	// The root builds and runs again with what it kept.
	var ran int
	root.Add(func(*engine.Steps) { ran++ }).Add(func(*engine.Steps) { ran++ })
	p = root.Promise()
	r.RunUntilIdle()
	_, err = waitDone(t, p)
	wantNoErr(t, err)
	if ran != 2 {
		t.Errorf("%d steps ran after the misuse, want 2", ran)
	}
}
