package reactor

import (
	"sync"
	"testing"
)

// A Post with a nil callback is the caller's mistake wherever it goes:
// through the ring (the loop is driven by another goroutine) and through
// the overflow list (the ring is full), as on the local queue, it reaches
// the panic handler with the mistake's name, not as a nil call's runtime
// error (invariant 5 of local.go names it so on the local queue).
func TestNilPostNamedThroughRingAndOverflow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		posts int // from another goroutine while the loop is held
	}{
		{"ring", 1},
		{"overflow", 3}, // RingSize 2: the third goes to the overflow list
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var panics []any
			r := newReactor(Options{CPU: -1, RingSize: 2, PanicHandler: func(v any) {
				mu.Lock()
				panics = append(panics, v)
				mu.Unlock()
			}}, true)
			r.Immediate(func() {
				done := make(chan bool)
				go func() {
					ok := true
					for range tc.posts {
						ok = X.Post(r, nil, nil, 0) && ok
					}
					done <- ok
				}()
				if !<-done {
					t.Error("X.Post(nil) off the loop reported false")
				}
				if tc.posts > 2 && !r.overflow.active.Load() {
					t.Error("the overflow list was not used")
				}
			})
			r.RunUntilIdle()
			mu.Lock()
			defer mu.Unlock()
			if len(panics) != tc.posts {
				t.Fatalf("panics %v, want %d", panics, tc.posts)
			}
			for _, v := range panics {
				if v != "reactor: Post with a nil callback" {
					t.Fatalf("panic %v, want one naming the nil Post", v)
				}
			}
		})
	}
}

// Under TakeIdle the driver is the loop for a moment: an Immediate(nil)
// or a nil Post made there is queued locally and, when it runs, reaches
// the panic handler with its name, as on the loop.
func TestNilImmediateAndPostNamedUnderTakeIdle(t *testing.T) {
	var panics []any
	r := newReactor(Options{CPU: -1, PanicHandler: func(v any) { panics = append(panics, v) }}, true)
	r.RunUntilIdle() // the caller becomes the driver
	if !X.TakeIdle(r) {
		t.Fatal("TakeIdle refused by the driver of an idle reactor")
	}
	h := r.Immediate(nil)
	ok := X.Post(r, nil, nil, 0)
	X.GiveBack(r)
	if h.kind != handleLocal || !ok {
		t.Fatalf("under TakeIdle: handle kind %d, Post %v; want a local handle and true", h.kind, ok)
	}
	r.RunUntilIdle()
	if len(panics) != 2 || panics[0] != "reactor: Immediate(nil)" || panics[1] != "reactor: Post with a nil callback" {
		t.Fatalf("panics %v, want Immediate(nil)'s, then the nil Post's", panics)
	}
}
