package reactor

import (
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// Producers post to a manual reactor whose ring holds two tasks while
// another goroutine drives it: most posts find the ring full or diverted
// and go to the overflow list, the rest to the ring, and the drain undiverts
// while producers still post. Every task runs once, each producer's in the
// order posted (package doc: "Callbacks posted from one goroutine run in
// the order posted"), and the ring and the list end undiverted and empty.
//
// The order broke when a producer stalled between claiming a ring position
// and publishing it: the drain's pop stopped at that gap, and the list ran
// before the ring's tasks behind the gap (drainOverflow). Many rounds, with
// more Ps than cores, so that a producer is descheduled in that window
// now and then (about one round in thirty failed before the fix).
func TestDivertStressManualKeepsEachProducersOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	rounds := 40
	if testing.Short() {
		rounds = 4
	}
	for range rounds {
		divertStressManual(t)
		if t.Failed() {
			return
		}
	}
}

func divertStressManual(t *testing.T) {
	t.Helper()
	const producers, per = 6, 2000
	r := newReactor(Options{CPU: -1, RingSize: 2}, true)
	defer r.Close()
	next := make([]int, producers) // loop-owned
	bad := ""                      // loop-owned: the first order error
	total := 0                     // loop-owned
	type rec struct{ p, i int }
	recs := make([]rec, producers*per)
	cb := func(arg unsafe.Pointer, _ uint64) {
		x := (*rec)(arg)
		if x.i != next[x.p] && bad == "" {
			bad = "producer " + itoa(x.p) + ": got " + itoa(x.i) + ", want " + itoa(next[x.p])
		}
		next[x.p] = x.i + 1
		total++
	}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				x := &recs[p*per+i]
				x.p, x.i = p, i
				if !r.xPost(cb, unsafe.Pointer(x), 0) {
					panic("post refused on an open reactor")
				}
				if i%64 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.RunUntilIdle()
		if total == producers*per {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ran %d of %d", total, producers*per)
		}
		runtime.Gosched()
	}
	wg.Wait()
	r.RunUntilIdle()
	if bad != "" {
		t.Fatal(bad)
	}
	if total != producers*per {
		t.Fatalf("ran %d, want %d", total, producers*per)
	}
	r.overflow.mu.Lock()
	used := r.overflow.seq
	r.overflow.mu.Unlock()
	if !r.inbox.Idle() || r.overflow.active.Load() || r.inbox.Len() != 0 {
		t.Fatalf("after all: ring idle %v, overflow active %v, ring len %d", r.inbox.Idle(), r.overflow.active.Load(), r.inbox.Len())
	}
	if used == 0 {
		t.Log("no post went to the overflow list this round")
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
