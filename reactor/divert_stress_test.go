package reactor_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Three other reactors' loops (which overflow into the list when B's ring
// of two is full or diverted) and three plain goroutines (which wait for
// room, or join the list while it is in use) post to B, whose loop parks
// whenever it runs dry. Every post runs once, each producer's in order,
// and B wakes for every one: a post refused by the diverted ring must
// still reach the list and wake the loop.
func TestDivertStressRealKeepsEachProducersOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	const loops, goroutines, per = 3, 3, 3000
	const producers = loops + goroutines
	b := reactortest.Start(t, reactor.Options{CPU: -1, RingSize: 2})
	next := make([]int, producers) // B's loop only
	var bad string                 // B's loop only
	total := 0                     // B's loop only
	all := make(chan struct{})
	type rec struct{ p, i int }
	recs := make([]rec, producers*per)
	cb := func(arg unsafe.Pointer, _ uint64) {
		x := (*rec)(arg)
		if x.i != next[x.p] && bad == "" {
			bad = fmt.Sprintf("producer %d: got %d, want %d", x.p, x.i, next[x.p])
		}
		next[x.p] = x.i + 1
		if total++; total == producers*per {
			close(all)
		}
	}
	postAll := func(p int) {
		for i := range per {
			x := &recs[p*per+i]
			x.p, x.i = p, i
			if !reactor.X.Post(b, cb, unsafe.Pointer(x), 0) {
				panic("post refused on an open reactor")
			}
			if i%128 == 0 {
				runtime.Gosched()
			}
		}
	}
	var wg sync.WaitGroup
	for p := range loops {
		a := reactortest.Start(t, reactor.Options{CPU: -1})
		wg.Add(1)
		a.Immediate(func() { defer wg.Done(); postAll(p) })
	}
	for p := loops; p < producers; p++ {
		wg.Add(1)
		go func() { defer wg.Done(); postAll(p) }()
	}
	select {
	case <-all:
	case <-time.After(reactortest.Hang):
		reactortest.OnLoop(t, b, func() { t.Errorf("ran %d of %d (a lost post or a missed wake-up)", total, producers*per) })
		t.FailNow()
	}
	wg.Wait()
	reactortest.OnLoop(t, b, func() {
		if bad != "" {
			t.Error(bad)
		}
	})
}
