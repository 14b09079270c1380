package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// TestArgsNarrowAfterWide: flow.narrow lets the step path skip args' upper
// slots; every write that fills them must clear it, or a later one-value
// success or reset would leave stale values behind. Each case fills the
// upper slots after the flag was set (a first one-value success sets it),
// then takes one of the narrow paths, and the next step must see exactly
// what that path left.
func TestArgsNarrowAfterWide(t *testing.T) {
	three := []Value{Int(1), Int(2), Int(3)}
	for _, tc := range []struct {
		name    string
		wide    func(as *Steps, done chan<- External)
		narrow  string // how the step after the wide one ends: "one", "implicit", "external", "sub"
		wantLen int
	}{
		{"set2 then one value", func(as *Steps, _ chan<- External) { as.Success(Int(1), Int(2)) }, "one", 1},
		{"set3 then one value", func(as *Steps, _ chan<- External) { as.Success(three...) }, "one", 1},
		{"set4 then one value", func(as *Steps, _ chan<- External) { as.Success(Int(1), Int(2), Int(3), Int(4)) }, "one", 1},
		{"set3 then implicit", func(as *Steps, _ chan<- External) { as.Success(three...) }, "implicit", 0},
		{"set3 then External on the loop", func(as *Steps, _ chan<- External) { as.Success(three...) }, "external", 1},
		{"set3 then sub-step", func(as *Steps, _ chan<- External) { as.Success(three...) }, "sub", 0},
		{"off-loop External with three then one value", func(as *Steps, done chan<- External) {
			done <- as.External() // completed from another goroutine: the mailbox's copy
		}, "one", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reactor.NewManual()
			root := New(r)
			var park External
			parked := make(chan External, 1)
			gotLen, gotV, ran := -1, int64(-1), false
			check := func(as *Steps) {
				gotLen, gotV, ran = as.Args().Len(), as.Arg(0).Int(), true
			}
			root.Add(func(as *Steps) { as.Success(Int(0)) }) // sets narrow
			root.Add(func(as *Steps) { tc.wide(as, parked) })
			switch tc.narrow {
			case "one":
				root.Add(func(as *Steps) { as.Success(Int(9)) })
			case "implicit":
				root.Add(func(as *Steps) {})
			case "external":
				root.Add(func(as *Steps) { park = as.External() })
			case "sub":
				root.Add(func(as *Steps) { as.Add(check) })
			}
			if tc.narrow != "sub" {
				root.Add(check)
			}
			root.Execute()
			r.RunUntilIdle()
			select {
			case x := <-parked:
				ok := make(chan bool)
				go func() { ok <- x.Success(three...) }() // off the loop: the mailbox
				if !<-ok {
					t.Fatal("off-loop External.Success reported false")
				}
				r.RunUntilIdle()
			default:
			}
			if tc.narrow == "external" {
				other := New(r)
				other.Add(func(as *Steps) {
					if !park.Success(Int(9)) {
						t.Error("External.Success on the loop reported false")
					}
				})
				other.Execute()
				r.RunUntilIdle()
				other.Release()
			}
			if !ran {
				t.Fatal("the checking step did not run")
			}
			wantV := int64(9)
			if tc.wantLen == 0 {
				wantV = 0
			}
			if gotLen != tc.wantLen || gotV != wantV {
				t.Errorf("the next step saw %d values, Arg(0) = %d; want %d values, Arg(0) = %d", gotLen, gotV, tc.wantLen, wantV)
			}
			root.Release()
		})
	}
}
