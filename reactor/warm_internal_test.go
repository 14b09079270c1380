//go:build linux

package reactor

import (
	"sync"
	"testing"
	"unsafe"
)

// TestGroupWarmSets: NewGroup gives each reactor of a group of warmFrom
// or more its entry of the group's warm sets, holding its attachment
// line, and its successor's (round robin); SetWarm fills the attachment
// slot and the layer's two lines and returns the successor's hint; a
// reactor of a smaller group, or outside any group, has no set, and
// SetWarm leaves it so and returns the zero hint.
func TestGroupWarmSets(t *testing.T) {
	g, err := NewGroup(5, Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Close() }()
	key := xNewExtKey("warm test")
	rs := g.Reactors()
	for i, r := range rs {
		if r.warm != &g.warm[i] || r.warmAfter != &g.warm[(i+1)%len(rs)] {
			t.Fatalf("reactor %d: warm sets %p and %p, want the group's entries %p and %p", i, r.warm, r.warmAfter, &g.warm[i], &g.warm[(i+1)%len(rs)])
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
		if h := X.SetWarm(r, unsafe.Pointer(a), unsafe.Pointer(b)); h.s != r.warmAfter {
			t.Fatalf("reactor %d: SetWarm's hint %p, want the next reactor's set %p", i, h.s, r.warmAfter)
		}
		X.Warm(WarmHint{r.warm}) // a hint: no fault, nothing changed (checked below)
		want := [4]unsafe.Pointer{unsafe.Pointer(&r.ext), unsafe.Pointer(r.ext.Load()), unsafe.Pointer(a), unsafe.Pointer(b)}
		for k := range want {
			if got := unsafe.Pointer(r.warm[k].Load()); got != want[k] || got == nil {
				t.Fatalf("reactor %d: warm line %d = %p, want %p", i, k, got, want[k])
			}
		}
	}
	small, err := NewGroup(warmFrom-1, Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = small.Close() }()
	if len(small.warm) != 0 {
		t.Fatalf("a group of %d reactors has %d warm sets, want none", warmFrom-1, len(small.warm))
	}
	for i, r := range small.Reactors() {
		h := X.SetWarm(r, unsafe.Pointer(new(int64)), nil)
		X.Warm(h)
		if r.warm != nil || r.warmAfter != nil || h.s != nil {
			t.Fatalf("reactor %d of a small group has a warm set", i)
		}
	}
	lone, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lone.Close() }()
	if h := X.SetWarm(lone, unsafe.Pointer(new(int64)), nil); h.s != nil { // no set: nothing to do, no panic
		t.Fatal("SetWarm on a reactor outside any group returned a hint")
	}
	if lone.warm != nil {
		t.Fatal("a reactor outside any group has a warm set")
	}
}

// TestGroupNextRoundRobinWhileWarming: on groups below and above
// warmFrom, Next hands out every reactor equally from many goroutines
// that ask for each next reactor's hint while SetWarm runs beside them (a
// layer attaching while a fan-out has started: -race checks the set's
// loads and stores), and one goroutine's consecutive calls follow the
// group's order.
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
					r := g.Next()
					X.Warm(WarmHint{r.warmAfter})
					local[index[r]]++
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
