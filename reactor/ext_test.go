package reactor_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Two layers attach with their own keys: neither sees or replaces the
// other's value, and the loop runs both hooks and closes both.
func TestExtKeysAreSeparate(t *testing.T) {
	r := reactor.NewManual()
	a, b := reactor.X.NewExtKey("a"), reactor.X.NewExtKey("b")
	var ranA, ranB, closedA, closedB int
	pendingB := true
	va := reactor.X.ExtOrInit(r, a, func() reactor.Ext {
		return reactor.Ext{Value: "A", Run: func() bool { ranA++; return false }, Close: func() { closedA++ }}
	})
	vb := reactor.X.ExtOrInit(r, b, func() reactor.Ext {
		return reactor.Ext{Value: "B", Run: func() bool { ranB++; pendingB = false; return false }, Close: func() { closedB++ }, Pending: &pendingB}
	})
	again := reactor.X.ExtOrInit(r, a, func() reactor.Ext { t.Fatal("init ran twice for one key"); return reactor.Ext{} })
	if va != "A" || vb != "B" || again != "A" || reactor.X.Ext(r, a) != "A" || reactor.X.Ext(r, b) != "B" {
		t.Fatalf("values: %v %v %v %v %v, want A B A A B", va, vb, again, reactor.X.Ext(r, a), reactor.X.Ext(r, b))
	}
	if v := reactor.X.Ext(r, reactor.X.NewExtKey("a")); v != nil {
		t.Fatalf("a new key with the same name read %v, want nil", v)
	}
	r.Immediate(func() {})
	r.RunUntilIdle()
	r.Immediate(func() {})
	r.RunUntilIdle()
	if ranA < 2 || ranB != 1 {
		t.Fatalf("hooks ran a=%d b=%d, want a>=2 (no Pending flag) and b=1 (Pending cleared)", ranA, ranB)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if closedA != 1 || closedB != 1 {
		t.Fatalf("Close hooks ran a=%d b=%d, want 1 each", closedA, closedB)
	}
}

// A layer's run is called on a drive with nothing else to do exactly when
// its flag says it may have work, whichever flag it keeps: the reactor's
// own (X.PendingFlag, read with the loop's other sources in one word),
// one of its own, or none (called on every iteration). The idle shortcut
// must not skip a run whose flag it cannot see.
func TestExtPendingFlagKinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		flag func(r *reactor.Reactor) *bool // nil: no Pending
	}{
		{"reactor's flag", func(r *reactor.Reactor) *bool { return reactor.X.PendingFlag(r) }},
		{"own flag", func(*reactor.Reactor) *bool { return new(bool) }},
		{"no flag", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reactor.NewManual()
			var pending *bool
			if tc.flag != nil {
				pending = tc.flag(r)
			}
			ran := 0
			// Attached from another goroutine, as engine.New may be.
			done := make(chan struct{})
			go func() {
				defer close(done)
				reactor.X.ExtOrInit(r, reactor.X.NewExtKey(tc.name), func() reactor.Ext {
					return reactor.Ext{Value: 1, Pending: pending, Run: func() bool {
						ran++
						if pending != nil {
							*pending = false
						}
						return false
					}}
				})
			}()
			<-done
			for round := range 3 {
				ran = 0
				if pending != nil {
					*pending = true // the driver is the loop between drives of a manual reactor
				}
				r.RunUntilIdle()
				if ran != 1 {
					t.Fatalf("round %d: run called %d times on a drive with its flag set, want 1", round, ran)
				}
				ran = 0
				r.RunUntilIdle()
				if want := 0; pending == nil {
					if ran < 1 {
						t.Fatalf("round %d: a run with no flag was not called on an idle drive", round)
					}
				} else if ran != want {
					t.Fatalf("round %d: run called %d times with its flag clear, want %d", round, ran, want)
				}
			}
		})
	}
}

// Two layers: the first keeps the reactor's own pending flag (as the
// engine does), the second, attached later from another goroutine, a
// flag of its own. The idle shortcut reads only the reactor's word, so
// the second attachment must make it look further (the word's foreign
// flag): the second layer's work is never stranded on a drive where the
// first has none, and the first's flag still works.
func TestSecondLayerAfterReactorFlag(t *testing.T) {
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
