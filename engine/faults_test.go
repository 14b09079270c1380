package engine_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/refsteps"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// Fault injection: a root canceled from inside each of its step
// callbacks in turn, in random programs. The canceled root ends (canceled,
// or as it would have if the cancel came too late), nothing leaks
// (runOnEngine checks frames, flows, roots and arena objects), and the
// other roots - independent, with no mutex between them - log exactly what
// they log without the fault.
func TestFaultCancelAtEveryStepBoundary(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	programs, injections := 0, 0
	for programs < 60 {
		b := make([]byte, 20+rng.IntN(80))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		p := refsteps.Decode(b)
		if len(p.Mutexes)+len(p.Throttles) > 0 || refsteps.Run(p).Ambiguous {
			continue
		}
		programs++
		base := runOnEngine(t, p)
		for victim := range p.Roots {
			n := 0
			for _, l := range base[victim] {
				if strings.HasPrefix(l, "x") {
					n++
				}
			}
			for k := 0; k < n; k++ {
				injections++
				got := runOnEngineWith(t, p, func(root, i int) bool { return root == victim && i == k })
				for other := range p.Roots {
					if other != victim && !slices.Equal(got[other], base[other]) {
						t.Fatalf("canceling root %d at its callback %d changed root %d:\n%q\nwant %q\n%s", victim, k, other, got[other], base[other], describe(p))
					}
				}
				last := got[victim][len(got[victim])-1]
				if last != refsteps.EndCanceled() && last != base[victim][len(base[victim])-1] {
					t.Fatalf("root %d canceled at callback %d ended %q (without the cancel: %q)\n%s", victim, k, last, base[victim][len(base[victim])-1], describe(p))
				}
				if !slices.Equal(got[victim][:k+1], base[victim][:k+1]) {
					t.Fatalf("root %d canceled at callback %d: its log before the cancel changed", victim, k)
				}
			}
		}
	}
	t.Logf("%d programs, %d injected cancels", programs, injections)
}

// A panic in every kind of callback fails that flow only, as InternalError
// with a *PanicError (a cancel handler's panic is recorded and the cancel
// goes on); a healthy flow on the same reactor is not touched.
func TestFaultPanicInEveryKindOfCallback(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		build    func(root *engine.Steps, m *syncprim.Mutex)
		cancel   bool   // cancel the root once it waits
		wantCode string // "" success
	}{
		{"step", func(root *engine.Steps, _ *syncprim.Mutex) {
			root.Add(func(as *engine.Steps) { panic(boom) })
		}, false, engine.InternalError},
		{"nested step", func(root *engine.Steps, _ *syncprim.Mutex) {
			root.Add(func(as *engine.Steps) { as.Add(func(as *engine.Steps) { panic(boom) }) })
		}, false, engine.InternalError},
		{"error handler", func(root *engine.Steps, _ *syncprim.Mutex) {
			root.Add(func(as *engine.Steps) { as.Error("E") }, func(as *engine.Steps, code string) { panic(boom) })
		}, false, engine.InternalError},
		{"cancel handler on cancel", func(root *engine.Steps, _ *syncprim.Mutex) {
			root.Add(func(as *engine.Steps) {
				as.SetCancel(func(*engine.Steps) { panic(boom) })
			})
		}, true, engine.Canceled},
		{"cancel handler on error", func(root *engine.Steps, _ *syncprim.Mutex) {
			root.Add(func(as *engine.Steps) {
				as.SetCancel(func(*engine.Steps) { panic(boom) })
				as.Add(func(as *engine.Steps) { as.Error("E") })
			})
		}, false, "E"},
		{"finally handler", func(root *engine.Steps, _ *syncprim.Mutex) {
			root.Add(func(as *engine.Steps) { as.SetFinally(func(*engine.Steps) { panic(boom) }) })
		}, false, ""},
		{"loop body", func(root *engine.Steps, _ *syncprim.Mutex) {
			root.Repeat(3, func(as *engine.Steps, i int) {
				if i == 1 {
					panic(boom)
				}
			})
		}, false, engine.InternalError},
		{"parallel branch", func(root *engine.Steps, _ *syncprim.Mutex) {
			p := root.Parallel()
			p.Add(func(as *engine.Steps) { as.WaitExternal() })
			p.Add(func(as *engine.Steps) { panic(boom) })
		}, false, engine.InternalError},
		{"sync section", func(root *engine.Steps, m *syncprim.Mutex) {
			root.Sync(m, func(as *engine.Steps) { panic(boom) }, nil)
		}, false, engine.InternalError},
		{"sync error handler", func(root *engine.Steps, m *syncprim.Mutex) {
			root.Sync(m, func(as *engine.Steps) { as.Error("E") }, func(as *engine.Steps, code string) { panic(boom) })
		}, false, engine.InternalError},
	}
	// (AwaitFunc runs fn on its own goroutine: a panic there is the
	// program's, as with go f().)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reactor.NewManual()
			m := syncprim.NewMutex(1, 0)
			healthy := engine.New(r)
			var hx engine.External
			healthy.Add(func(as *engine.Steps) { hx = as.External() }).Add(func(as *engine.Steps) { as.Success(engine.Int(1)) })
			hp := healthy.Promise()

			root := engine.New(r)
			tt.build(root, m)
			p := root.Promise()
			r.RunUntilIdle()
			if tt.cancel {
				root.Cancel()
				r.RunUntilIdle()
			}
			_, err := p.Wait()
			switch e, _ := err.(*engine.Error); {
			case tt.wantCode == "" && err != nil, tt.wantCode != "" && (e == nil || e.Code != tt.wantCode):
				t.Fatalf("flow ended %v, want %q", err, tt.wantCode)
			}
			var pe *engine.PanicError
			if !errors.As(root.State().LastException, &pe) || !errors.Is(pe, boom) {
				t.Fatalf("LastException %v, want the *PanicError of the panic", root.State().LastException)
			}
			if !hx.Success() {
				t.Fatal("the healthy flow's External went stale")
			}
			r.RunUntilIdle()
			if args, err := hp.Wait(); err != nil || args.At(0).Int() != 1 {
				t.Fatalf("healthy flow: %v %v", args, err)
			}
			if s := m.Stats(); s.Holders != 0 || s.Queued != 0 {
				t.Fatalf("mutex not released: %+v", s)
			}
			if st := engine.StatsOf(r); st.FramesLive != 0 || st.FlowsLive != 0 {
				t.Fatalf("%+v", st)
			}
		})
	}
}

// External completions after the step's timeout and after its flow's
// cancel report false and change nothing, on the loop and off it.
func TestFaultExternalAfterTimeoutAndCancel(t *testing.T) {
	for _, end := range []string{"timeout", "cancel"} {
		for _, off := range []bool{false, true} {
			for _, fail := range []bool{false, true} {
				r := reactor.NewManual()
				var x engine.External
				root := engine.New(r)
				root.Add(func(as *engine.Steps) {
					as.SetTimeout(10 * time.Millisecond)
					x = as.External()
				})
				p := root.Promise()
				r.RunUntilIdle()
				if end == "timeout" {
					r.Advance(20 * time.Millisecond)
				} else {
					root.Cancel()
					r.RunUntilIdle()
				}
				_, before := p.Wait()
				complete := func() bool {
					if fail {
						return x.Error("Late")
					}
					return x.Success(engine.Int(1))
				}
				var ok bool
				if off {
					done := make(chan bool)
					go func() { done <- complete() }()
					ok = <-done
				} else {
					r.Immediate(func() { ok = complete() })
				}
				r.RunUntilIdle()
				if ok {
					t.Fatalf("%s, off loop %v, error %v: a late completion was accepted", end, off, fail)
				}
				if _, after := p.Wait(); after.Error() != before.Error() {
					t.Fatalf("result changed from %v to %v", before, after)
				}
				if st := engine.StatsOf(r); st.FramesLive != 0 {
					t.Fatalf("%+v", st)
				}
			}
		}
	}
}

// Completions and Cancel race from other goroutines on real reactors: each
// flow ends exactly once, as a success or Canceled, and nothing leaks. Run
// under -race.
func TestFaultCompletionsRaceCancelOnRealReactors(t *testing.T) {
	g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()
	const flows = 2000
	type flowRec struct {
		root *engine.Steps
		p    *engine.Promise
		x    chan engine.External
	}
	recs := make([]flowRec, flows)
	for i := range recs {
		rec := &recs[i]
		rec.x = make(chan engine.External, 1)
		rec.root = engine.New(g.Reactors()[i%2])
		rec.root.Add(func(as *engine.Steps) {
			as.SetCancel(func(*engine.Steps) {})
			rec.x <- as.External()
		})
		rec.p = rec.root.Promise()
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < flows; i += 4 {
				rec := &recs[i]
				x := <-rec.x
				if i%2 == 0 {
					go rec.root.Cancel()
					x.Success(engine.Int(int64(i)))
				} else {
					go x.Error("E")
					rec.root.Cancel()
				}
			}
		}()
	}
	wg.Wait()
	outcomes := map[string]int{}
	for i := range recs {
		select {
		case <-recs[i].p.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("flow %d never ended", i)
		}
		args, err := recs[i].p.Wait()
		switch e, _ := err.(*engine.Error); {
		case err == nil && args.At(0).Int() == int64(i):
			outcomes["success"]++
		case e != nil && (e.Code == engine.Canceled || e.Code == "E"):
			outcomes[e.Code]++
		default:
			t.Fatalf("flow %d ended %v %v", i, args, err)
		}
	}
	for _, r := range g.Reactors() {
		done := make(chan engine.Stats)
		r.Immediate(func() { done <- engine.StatsOf(r) })
		if st := <-done; st.FramesLive != 0 || st.FlowsLive != 0 {
			t.Fatalf("after every flow ended: %+v", st)
		}
	}
	t.Logf("outcomes: %v", outcomes)
}
