package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Roots waited for by a Promise or in a Batch start on the short start of
// a kept root (startsPlain: the Promise, the Batch and an OnEnd are only
// the end's) and end, on success, on finishRoot's waited end. Run again
// and again (pooled, kept flows), with a name or not, an OnEnd or not,
// succeeding, failing, canceled or ending on a timer, each run gives its
// own result to its waiter, calls its OnEnd once with its code, and is
// counted in the reactor's metrics and its name's, time included.
func TestWaitedRootsStartAndEndPaths(t *testing.T) {
	type outcome int
	const (
		succeed outcome = iota
		fail
		cancel
		timer
	)
	for _, tc := range []struct {
		name  string
		onEnd bool
		batch bool
	}{
		{"", false, false}, {"w-named", false, false}, {"", true, false}, {"w-named-onend", true, false},
		{"", false, true}, {"w-batch", false, true}, {"w-batch-onend", true, true},
	} {
		t.Run(fmt.Sprintf("name=%q,onEnd=%v,batch=%v", tc.name, tc.onEnd, tc.batch), func(t *testing.T) {
			r := reactor.NewManual()
			root := New(r)
			var ends []string
			if tc.onEnd {
				xOnEnd(root, func(_ *Steps, code string) { ends = append(ends, code) })
			}
			if tc.name != "" {
				root.SetName(tc.name)
			}
			var b Batch
			want := map[outcome]int{}
			for run := range 12 {
				o := outcome(run % 4)
				want[o]++
				v := int64(run)
				root.Add(func(as *Steps) {
					switch o {
					case fail:
						as.Error("Boom", "run "+fmt.Sprint(v))
					case cancel:
						as.WaitExternal()
					case timer:
						x := as.External()
						as.Reactor().Deferred(2*time.Millisecond, func() { x.Success(Int(v)) })
					default:
						as.Success(Int(v))
					}
				})
				var p *Promise
				if tc.batch {
					b.Add(root)
					b.Execute()
				} else {
					p = root.Promise()
				}
				r.RunUntilIdle()
				switch o {
				case cancel:
					root.Cancel()
					r.RunUntilIdle()
				case timer:
					r.Advance(2 * time.Millisecond)
				}
				var args *Args
				var err error
				if tc.batch {
					b.Wait()
					args, err = b.Result(0)
				} else {
					args, err = p.Wait()
				}
				switch o {
				case succeed, timer:
					if err != nil || args.At(0).Int() != v {
						t.Fatalf("run %d: %v %v, want %d", run, args, err, v)
					}
				case fail:
					if e, ok := err.(*Error); !ok || e.Code != "Boom" || e.Info != "run "+fmt.Sprint(v) {
						t.Fatalf("run %d: %v, want Boom", run, err)
					}
				case cancel:
					if e, ok := err.(*Error); !ok || e.Code != Canceled {
						t.Fatalf("run %d: %v, want Canceled", run, err)
					}
				}
				if root.Executing() {
					t.Fatalf("run %d: still executing after its end", run)
				}
			}
			if tc.onEnd {
				if len(ends) != 12 {
					t.Fatalf("OnEnd ran %d times, want 12", len(ends))
				}
				for run, code := range ends {
					w := map[outcome]string{succeed: "", timer: "", fail: "Boom", cancel: Canceled}[outcome(run%4)]
					if code != w {
						t.Fatalf("OnEnd of run %d: %q, want %q", run, code, w)
					}
				}
			}
			m, err := ReadMetrics(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			ok := uint64(want[succeed] + want[timer])
			if m.FlowsStarted != 12 || m.FlowsSucceeded != ok || m.FlowsFailed != uint64(want[fail]) || m.FlowsCanceled != uint64(want[cancel]) || m.FlowsRunning != 0 {
				t.Fatalf("flows %+v", m)
			}
			if tc.name != "" {
				var nm NameMetrics
				for _, n := range m.ByName {
					if n.Name == tc.name {
						nm = n
					}
				}
				wantTime := time.Duration(want[timer]) * 2 * time.Millisecond
				if nm.Started != 12 || nm.Succeeded != ok || nm.Failed != uint64(want[fail]) || nm.Canceled != uint64(want[cancel]) || nm.Time != wantTime {
					t.Fatalf("ByName %+v, want %d succeeded and time %v", nm, ok, wantTime)
				}
			}
			root.Release()
		})
	}
}

// Done asked by many goroutines at once, while the flow ends on its
// loop: every caller gets a channel that is closed by the end (the state
// word orders the making of the channel; no mutex), Wait returns the
// flow's result, and Done after the end is closed at once.
func TestPromiseDoneManyAskersRacingTheEnd(t *testing.T) {
	g, err := reactor.NewGroup(2, reactor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()
	for round := range 200 {
		root := New(g.Next())
		xs := make(chan External, 1)
		root.Add(func(as *Steps) { xs <- as.External() })
		p := root.Promise()
		x := <-xs
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				select {
				case <-p.Done():
				case <-time.After(10 * time.Second):
					t.Error("Done never closed")
				}
			}()
		}
		close(start)
		if round%2 == 0 {
			x.Success(Int(int64(round)))
		} else {
			go x.Success(Int(int64(round)))
		}
		wg.Wait()
		if args, err := p.Wait(); err != nil || args.At(0).Int() != int64(round) {
			t.Fatalf("round %d: %v %v", round, args, err)
		}
		select {
		case <-p.Done():
		default:
			t.Fatalf("round %d: Done after the end is not closed", round)
		}
		root.Release()
	}
}
