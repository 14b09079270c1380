package engine

import (
	"testing"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// releaseWhenEnded, the loop's look for a ReleaseAtEnd made off the loop
// (the plain end's store of running may pass its load of the flag): each
// case of its test, and the holder's post itself.

func TestReleaseWhenEnded(t *testing.T) {
	SkipIfDebug(t)
	cases := []struct {
		name      string
		running   bool // the flow still waits when the look runs
		flag      bool // releaseAtEnd set, nobody took it
		staleTurn bool // the look carries an earlier lease (released and handed out again since)
		wantLive  int  // RootsLive after the look
	}{
		{"ended, flag left: released here", false, true, false, 0},
		{"ended, flag taken by the end", false, false, false, 1},
		{"still running: the end releases", true, true, false, 1},
		{"another lease since", false, true, true, 1},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			r := reactor.NewManual()
			root := New(r)
			var x External
			root.Add(func(as *Steps) { x = as.External() })
			root.Execute()
			r.RunUntilIdle()
			rt := rootOf(root)
			if !tt.running {
				x.Success()
				r.RunUntilIdle()
			}
			lease := rt.lease.Load()
			if tt.staleTurn {
				// The look was posted under an earlier lease: the root
				// was released and handed out again since (New clears
				// the released bit of a bumped count).
				lease -= leaseOne
			}
			rt.releaseAtEnd.Store(tt.flag)
			if !reactor.X.Post(r, releaseWhenEnded, unsafe.Pointer(rt), lease) {
				t.Fatal("post refused on an open reactor")
			}
			r.RunUntilIdle()
			if got := StatsOf(r).RootsLive; got != tt.wantLive {
				t.Fatalf("RootsLive %d after the look, want %d", got, tt.wantLive)
			}
			if tt.running {
				if !rt.releaseAtEnd.Load() {
					t.Fatal("the look took the flag of a run that still waits")
				}
				x.Success()
				r.RunUntilIdle()
				if got := StatsOf(r).RootsLive; got != 0 {
					t.Fatalf("RootsLive %d after the end, want 0: the end did not release", got)
				}
			}
		})
	}
}

// A ReleaseAtEnd from a goroutine that is not the loop, while the flow
// waits: the holder posts the look, which runs while the flow still waits
// and leaves the flag; the end (advanceFast's plain end) releases the root:
// released once.
func TestReleaseAtEndOffLoopPostsTheLook(t *testing.T) {
	SkipIfDebug(t)
	r := reactor.NewManual()
	root := New(r)
	var x External
	root.Add(func(as *Steps) { x = as.External() })
	root.Execute()
	r.RunUntilIdle()
	done := make(chan struct{})
	go func() { root.ReleaseAtEnd(); close(done) }()
	<-done
	if !rootOf(root).releaseAtEnd.Load() {
		t.Fatal("ReleaseAtEnd of a running root left no flag")
	}
	// The look runs first (posted before the completion), finds the run
	// waiting and leaves the flag to the end.
	x.Success()
	r.RunUntilIdle()
	st := StatsOf(r)
	if st.RootsLive != 0 || st.FramesLive != 0 {
		t.Fatalf("%+v after the end, want the root and its frames back", st)
	}
}
