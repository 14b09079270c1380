package reactor_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Two layers: the first keeps the reactor's own pending flag (as the
// engine does), the second, attached later from another goroutine, a
// flag of its own. The idle shortcut reads only the reactor's word, so
// the second attachment must make it look further (the word's foreign
// flag): the second layer's work is never stranded on a drive where the
// first has none, and the first's flag still works.
func TestReview2SecondLayerAfterReactorFlag(t *testing.T) {
	r := reactor.NewManual()
	first := reactor.X.PendingFlag(r)
	ranFirst, ranSecond := 0, 0
	attach := func(name string, flag *bool, ran *int) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			reactor.X.ExtOrInit(r, reactor.X.NewExtKey(name), func() reactor.Ext {
				return reactor.Ext{Value: 1, Pending: flag, Run: func() bool {
					*ran++
					*flag = false
					return false
				}}
			})
		}()
		<-done
	}
	attach("first", first, &ranFirst)
	r.RunUntilIdle()
	second := new(bool)
	attach("second", second, &ranSecond)
	for round := range 3 {
		ranFirst, ranSecond = 0, 0
		*second = true // the driver is the loop between drives of a manual reactor
		r.RunUntilIdle()
		if ranSecond != 1 || ranFirst != 0 {
			t.Fatalf("round %d: second's flag set: runs first=%d second=%d, want 0 and 1", round, ranFirst, ranSecond)
		}
		ranFirst, ranSecond = 0, 0
		*first = true
		r.RunUntilIdle()
		if ranFirst != 1 || ranSecond != 0 {
			t.Fatalf("round %d: first's flag set: runs first=%d second=%d, want 1 and 0", round, ranFirst, ranSecond)
		}
	}
}
