package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// CONTRACT.md: executed roots start in the order of their Execute calls, whether
// Execute ran on the loop (ready queue) or off it (a task): a root executed
// off the loop after one executed on it must not overtake it.
func TestRootsStartInExecuteOrderOnAndOffTheLoop(t *testing.T) {
	r := reactor.NewManual()
	var got []string
	mk := func(name string) *Steps {
		root := New(r)
		root.Add(func(*Steps) { got = append(got, name) })
		return root
	}
	c, d := mk("c"), mk("d")
	r.Immediate(func() {
		c.Execute() // on the loop: ready queue
		posted := make(chan struct{})
		go func() { d.Execute(); close(posted) }() // off the loop, after c's Execute
		<-posted                                   // d's start task is in the ring now

	})
	r.RunUntilIdle()
	if len(got) != 2 || got[0] != "c" || got[1] != "d" {
		t.Fatalf("start order %v, want [c d]", got)
	}
}
