package engine_test

import (
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Fire and forget (New, Add, Execute, ReleaseAtEnd) lets
// the flow finish - it is not canceled - and recycles its root by itself.
func TestReleaseAtEndFireAndForget(t *testing.T) {
	r := reactor.NewManual()
	var xs []engine.External
	finished := 0
	for i := 0; i < 100; i++ {
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.SetCancel(func(*engine.Steps) { t.Error("a fire-and-forget flow was canceled") })
			xs = append(xs, as.External())
		}).Add(func(as *engine.Steps) { finished++ })
		root.Execute()
		root.ReleaseAtEnd()
	}
	r.RunUntilIdle()
	if st := engine.StatsOf(r); st.RootsLive != 100 {
		t.Fatalf("RootsLive %d while the flows run, want 100", st.RootsLive)
	}
	for _, x := range xs {
		x.Success()
	}
	r.RunUntilIdle()
	if finished != 100 {
		t.Fatalf("%d flows finished, want 100", finished)
	}
	if st := engine.StatsOf(r); st.RootsLive != 0 || st.FramesLive != 0 {
		t.Fatalf("after the flows ended: %+v, want every root and frame back", st)
	}
	// The recycled roots serve New again without growing the pool.
	for i := 0; i < 1000; i++ {
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {})
		root.Execute()
		root.ReleaseAtEnd()
		r.RunUntilIdle()
	}
	if st := engine.StatsOf(r); st.RootsLive != 0 {
		t.Fatalf("RootsLive %d after 1000 fire-and-forget flows", st.RootsLive)
	}
}

// Every way the flow can end, and the orders of ReleaseAtEnd and the end,
// recycle the root exactly once; Release still cancels.
func TestReleaseAtEndEveryEnd(t *testing.T) {
	engine.SkipIfDebug(t)
	ends := []struct {
		name string
		step engine.ExecFunc
		end  func(root *engine.Steps, x engine.External)
	}{
		{"success", func(as *engine.Steps) {}, nil},
		{"error", func(as *engine.Steps) { as.Error("Boom") }, nil},
		{"external", func(as *engine.Steps) { as.WaitExternal() }, func(root *engine.Steps, x engine.External) {}},
		{"canceled", func(as *engine.Steps) { as.WaitExternal() }, func(root *engine.Steps, x engine.External) { root.Cancel() }},
		{"in its own last step", nil, nil},
		{"before Execute", nil, nil},
	}
	for _, tt := range ends {
		t.Run(tt.name, func(t *testing.T) {
			r := reactor.NewManual()
			root := engine.New(r)
			var kept *engine.Steps
			switch tt.name {
			case "in its own last step":
				root.Add(func(as *engine.Steps) { root.ReleaseAtEnd() })
			case "before Execute":
				root.ReleaseAtEnd()
				if root.Valid() {
					t.Fatal("a built root released at once stays valid")
				}
				return
			default:
				root.Add(func(as *engine.Steps) { kept = as; tt.step(as) })
			}
			root.Execute()
			if tt.name != "in its own last step" {
				root.ReleaseAtEnd()
			}
			r.RunUntilIdle()
			if tt.end != nil {
				if tt.name == "external" {
					kept.Success()
				} else {
					tt.end(root, engine.External{})
				}
				r.RunUntilIdle()
			}
			if st := engine.StatsOf(r); st.RootsLive != 0 || st.FramesLive != 0 {
				t.Fatalf("%+v, want the root and its frames back", st)
			}
			if root.Valid() {
				t.Fatal("root still valid after its flow ended")
			}
		})
	}
}

// ReleaseAtEnd from another goroutine racing the end of the flow on a
// real reactor: released exactly once (run under -race).
func TestReleaseAtEndRacesEnd(t *testing.T) {
	r, err := reactor.New(reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.Run() }()
	defer r.Close()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				root := engine.New(r)
				root.Add(func(as *engine.Steps) {})
				root.Execute()
				root.ReleaseAtEnd()
			}
		}()
	}
	wg.Wait()
	done := make(chan engine.Stats)
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.Immediate(func() { done <- engine.StatsOf(r) })
		st := <-done
		if st.RootsLive == 0 && st.FramesLive == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%+v: roots not recycled", st)
		}
	}
}
