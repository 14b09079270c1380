package reactor

import (
	"testing"
	"time"
)

// The adaptive spin's policy, event by event: what it learns from
// wake-ups by posted work and from its own spins.
func TestAdaptiveSpinPolicy(t *testing.T) {
	const us = time.Microsecond
	type ev struct {
		woke  time.Duration // > 0: a wake-up by a post after sleeping this long
		spun  bool          // a spin that found work (found) or not
		found bool
		took  time.Duration
	}
	woke := func(d time.Duration) ev { return ev{woke: d} }
	hit := func(took time.Duration) ev { return ev{spun: true, found: true, took: took} }
	miss := ev{spun: true}
	tests := []struct {
		name   string
		events []ev
		budget time.Duration
		cool   uint8
	}{
		{"starts off", nil, 0, 0},
		{"a late post teaches nothing", []ev{woke(30 * us), woke(time.Millisecond)}, 0, 0},
		{"a quick post: twice its gap", []ev{woke(6 * us)}, 12 * us, 0},
		{"never shorter than the minimum", []ev{woke(1 * us)}, adaptiveMinSpin, 0},
		{"never longer than the maximum", []ev{woke(20 * us)}, adaptiveMaxSpin, 0},
		{"a late post keeps a learned spin", []ev{woke(6 * us), woke(40 * us)}, 12 * us, 0},
		{"a hit keeps it", []ev{woke(6 * us), hit(1 * us)}, 12 * us, 0},
		{"a slow hit stretches it", []ev{woke(6 * us), hit(10 * us)}, 20 * us, 0},
		{"one miss keeps it", []ev{woke(6 * us), miss}, 12 * us, 0},
		{"a hit between misses", []ev{woke(6 * us), miss, hit(1 * us), miss}, 12 * us, 0},
		{"two misses in a row turn it off", []ev{woke(6 * us), miss, miss}, 0, 0},
		{"then the next quick post teaches", []ev{woke(6 * us), miss, miss, woke(3 * us)}, 6 * us, 0},
		{"off twice without a hit: one quick post passes", []ev{woke(6 * us), miss, miss, woke(3 * us), miss, miss}, 0, 1},
		{"... and the second teaches", []ev{woke(6 * us), miss, miss, woke(3 * us), miss, miss, woke(3 * us), woke(4 * us)}, 8 * us, 0},
		{"a hit forgives", []ev{woke(6 * us), miss, miss, woke(3 * us), hit(1 * us), miss, miss, woke(5 * us)}, 10 * us, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a adaptiveSpin
			for _, e := range tt.events {
				if e.spun {
					a.spun(e.found, e.took)
				} else {
					a.wokeByPost(e.woke)
				}
			}
			if a.budget != tt.budget || a.cool != tt.cool {
				t.Errorf("budget %v, cool %d; want %v, %d", a.budget, a.cool, tt.budget, tt.cool)
			}
		})
	}
}

// Spins turned off again and again without a hit back off: each time doubles the quick wake-ups let pass
// before the next spin, up to adaptiveMaxCool.
func TestAdaptiveSpinBacksOff(t *testing.T) {
	a := adaptiveSpin{budget: adaptiveMinSpin}
	want := []uint8{0, 1, 3, 7, 15, 31, 63, 63, 63}
	for i, w := range want {
		for range adaptiveMisses {
			if a.budget == 0 {
				t.Fatalf("round %d: not spinning before its misses", i+1)
			}
			a.spun(false, a.budget)
		}
		if a.budget != 0 || a.cool != w {
			t.Fatalf("round %d: budget %v, cool %d; want 0, %d", i+1, a.budget, a.cool, w)
		}
		for range a.cool {
			a.wokeByPost(time.Microsecond)
			if a.budget != 0 {
				t.Fatalf("round %d: spinning again while cooling off", i+1)
			}
		}
		a.wokeByPost(time.Microsecond)
		if a.budget == 0 {
			t.Fatalf("round %d: not spinning after %d quick wake-ups", i+1, w+1)
		}
	}
}
