package engine_test

// Loops on the accessor Parallel returns: Loop, Repeat and ForEach each
// run as one more branch (the C++ reference's parallel().repeat(...)).

import (
	"fmt"
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The reference's execute_outer shape: three Add branches that each add
// two sub-steps, and a Repeat(2) branch; the step after the parallel one
// runs once all four have ended.
func TestParallelAccessorLoopsAreBranches(t *testing.T) {
	cases := []struct {
		name  string
		build func(p *engine.Steps, log *logger)
		want  string
	}{
		{"Repeat", func(p *engine.Steps, log *logger) {
			p.Repeat(2, func(as *engine.Steps, i int) { log.add("r%d", i) })
		}, "r0 r1"},
		{"Loop with Break", func(p *engine.Steps, log *logger) {
			n := 0
			p.Loop(func(as *engine.Steps) {
				n++
				log.add("l%d", n)
				if n == 3 {
					as.Break()
				}
			})
		}, "l1 l2 l3"},
		{"labelled Continue", func(p *engine.Steps, log *logger) {
			p.Repeat(3, func(as *engine.Steps, i int) {
				if i == 1 {
					as.Continue("outer")
				}
				log.add("c%d", i)
			}, "outer")
		}, "c0 c2"},
		{"ForEach", func(p *engine.Steps, log *logger) {
			engine.ForEach(p, []string{"x", "y"}, func(as *engine.Steps, i int, v string) { log.add("%s", v) })
		}, "x y"},
		{"ForEachMap", func(p *engine.Steps, log *logger) {
			engine.ForEachMap(p, map[string]int{"k2": 2, "k1": 1}, func(as *engine.Steps, k string, v int) { log.add("%s=%d", k, v) })
		}, "k1=1 k2=2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			var log logger
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				p := as.Parallel(func(as *engine.Steps, code string) { log.add("parallel failed: %s", code) })
				p.Add(func(as *engine.Steps) {
					as.Add(log.fn("a1"))
					as.Add(log.fn("a2"))
				})
				c.build(p, &log)
				as.Add(log.fn("after"))
			})
			_, err := runFlow(t, r, root)
			wantNoErr(t, err)
			l := log.lines
			if len(l) == 0 || l[len(l)-1] != "after" {
				t.Fatalf("log %q: want 'after' last", l)
			}
			var loop []string
			for _, s := range l[:len(l)-1] {
				if s != "a1" && s != "a2" {
					loop = append(loop, s)
				}
			}
			if got := strings.Join(loop, " "); got != c.want {
				t.Fatalf("loop branch logged %q, want %q (log %q)", got, c.want, l)
			}
			if indexOf(l, "a1") < 0 || indexOf(l, "a2") < indexOf(l, "a1") {
				t.Fatalf("the Add branch did not run in order: %q", l)
			}
		})
	}
}

// An error in a loop branch cancels its siblings and reaches the parallel
// step's error handler, as a failing Add branch does.
func TestParallelAccessorLoopBranchFails(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		p := as.Parallel(func(as *engine.Steps, code string) {
			log.add("handler %s", code)
			as.Success()
		})
		p.Add(func(as *engine.Steps) {
			as.SetCancel(func(*engine.Steps) { log.add("sibling canceled") })
		})
		p.Repeat(3, func(as *engine.Steps, i int) {
			if i == 1 {
				as.Error("LoopFailed")
			}
		})
		as.Add(log.fn("after"))
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "sibling canceled", "handler LoopFailed", "after")
}

// A root being built (off the loop too) takes a loop on its level-0
// parallel accessor.
func TestParallelAccessorLoopOnRootBeingBuilt(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := root.Parallel()
		p.Add(log.fn("add"))
		p.Repeat(2, func(as *engine.Steps, i int) { log.add("r%d", i) })
		root.Add(log.fn("after"))
	}()
	<-done
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if got := fmt.Sprint(log.lines); got != "[add r0 r1 after]" {
		t.Fatalf("log %s, want [add r0 r1 after]", got)
	}
}

// The accessor of a parallel step that has started takes no more
// branches: a loop there stays a misuse.
func TestParallelAccessorLoopAfterStartIsMisuse(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	var p *engine.Steps
	root.Add(func(as *engine.Steps) {
		p = as.Parallel()
		p.Add(func(*engine.Steps) {})
	})
	root.Add(func(as *engine.Steps) {
		p.Repeat(1, func(*engine.Steps, int) {})
	})
	_, err := runFlow(t, r, root)
	wantCode(t, err, engine.InternalError)
}
