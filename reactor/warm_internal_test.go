//go:build linux

package reactor

import (
	"sync"
	"testing"
	"unsafe"
)

// TestGroupWarmSets: NewGroup gives each reactor its entry of the group's
// warm sets, holding its attachment line; SetWarm fills the attachment
// slot and the layer's two lines; a reactor outside a group has no set
// and SetWarm leaves it so.
func TestGroupWarmSets(t *testing.T) {
	g, err := NewGroup(5, Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Close() }()
	key := xNewExtKey("warm test")
	for i, r := range g.Reactors() {
		if r.warm != &g.warm[i] {
			t.Fatalf("reactor %d: warm set %p, want the group's entry %p", i, r.warm, &g.warm[i])
		}
		if got := unsafe.Pointer(r.warm[0].Load()); got != unsafe.Pointer(&r.ext) {
			t.Fatalf("reactor %d: first warm line %p, want its attachment %p", i, got, &r.ext)
		}
		for k := 1; k < len(r.warm); k++ {
			if r.warm[k].Load() != nil {
				t.Fatalf("reactor %d: warm line %d set before any layer attached", i, k)
			}
		}
		a, b := new(int64), new(int64)
		X.ExtOrInit(r, key, func() Ext { return Ext{Value: a} })
		X.SetWarm(r, unsafe.Pointer(a), unsafe.Pointer(b))
		want := [4]unsafe.Pointer{unsafe.Pointer(&r.ext), unsafe.Pointer(r.ext.Load()), unsafe.Pointer(a), unsafe.Pointer(b)}
		for k := range want {
			if got := unsafe.Pointer(r.warm[k].Load()); got != want[k] || got == nil {
				t.Fatalf("reactor %d: warm line %d = %p, want %p", i, k, got, want[k])
			}
		}
	}
	lone, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lone.Close() }()
	X.SetWarm(lone, unsafe.Pointer(new(int64)), nil) // no set: nothing to do, no panic
	if lone.warm != nil {
		t.Fatal("a reactor outside any group has a warm set")
	}
}

// TestGroupNextRoundRobinWhileWarming: on groups below and above
// warmFrom, Next hands out every reactor equally from many goroutines
// while SetWarm runs beside them (a layer attaching while a fan-out has
// started: -race checks the set's loads and stores), and one goroutine's
// consecutive calls follow the group's order.
func TestGroupNextRoundRobinWhileWarming(t *testing.T) {
	for _, n := range []int{1, 2, warmFrom - 1, warmFrom, 16} {
		g, err := NewGroup(n, Options{CPU: -1})
		if err != nil {
			t.Fatal(err)
		}
		rs := g.Reactors()
		index := map[*Reactor]int{}
		for i, r := range rs {
			index[r] = i
		}
		counts := make([]int, n)
		var mu sync.Mutex
		var wg sync.WaitGroup
		const callers, calls = 8, 64
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range rs {
				X.SetWarm(r, unsafe.Pointer(new(int64)), unsafe.Pointer(new(int64)))
			}
		}()
		for c := 0; c < callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				local := make([]int, n)
				for j := 0; j < calls*n; j++ {
					local[index[g.Next()]]++
				}
				mu.Lock()
				for i, k := range local {
					counts[i] += k
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		for i, k := range counts {
			if k != callers*calls {
				t.Fatalf("%d reactors: reactor %d given %d times of %d calls, want %d", n, i, k, callers*calls*n, callers*calls)
			}
		}
		first := index[g.Next()]
		for j := 1; j <= 2*n; j++ {
			if got := index[g.Next()]; got != (first+j)%n {
				t.Fatalf("%d reactors: call %d after reactor %d gave reactor %d, want %d", n, j, first, got, (first+j)%n)
			}
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
