package timerwheel

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var backgrounds = []int{0, 100_000}

// fillBackground adds n timers with deadlines in [lo, lo+span), the crowd a
// busy reactor carries while the measured timer comes and goes.
func fillBackground(w *Wheel, n int, lo, span uint64) {
	rng := rand.New(rand.NewPCG(1, 2))
	e := Entry{Fn: func() {}}
	for range n {
		w.Add(lo+rng.Uint64N(span), e)
	}
}

// BenchmarkAddCancel is the hot path: arm a step timeout, then disarm it
// because the step finished first. The background timers share slots with
// the measured ones, so links touch real neighbours.
func BenchmarkAddCancel(b *testing.B) {
	for _, bg := range backgrounds {
		b.Run(fmt.Sprintf("impl=wheel/background=%d", bg), func(b *testing.B) {
			w := New(0)
			fillBackground(w, bg, 1, 1<<20)
			e := Entry{Fn: func() {}}
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				i++
				h := w.Add(1000+i&255, e)
				w.Cancel(h)
			}
			if w.Len() != bg {
				b.Fatalf("Len %d, want %d", w.Len(), bg)
			}
		})
		b.Run(fmt.Sprintf("impl=time.AfterFunc/background=%d", bg), func(b *testing.B) {
			f := func() {}
			timers := make([]*time.Timer, bg)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range timers {
				timers[i] = time.AfterFunc(time.Hour+time.Duration(rng.Int64N(int64(time.Hour))), f)
			}
			b.ReportAllocs()
			for b.Loop() {
				t := time.AfterFunc(time.Second, f)
				t.Stop()
			}
			b.StopTimer()
			for _, t := range timers {
				t.Stop()
			}
		})
	}
}

// BenchmarkAddFire measures a timer that does expire, in steady state: each
// op advances one tick, adds a timer delay ticks ahead and fires the one
// added delay ticks ago, so longer delays include their cascades.
func BenchmarkAddFire(b *testing.B) {
	cases := []struct{ delay, bg uint64 }{
		{1, 0}, {1, 100_000}, {4096, 0}, {1 << 18, 0},
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("delay=%d/background=%d", c.delay, c.bg), func(b *testing.B) {
			w := New(0)
			fillBackground(w, int(c.bg), 1<<60, 1<<60) // never due during the run
			e := Entry{Fn: func() {}}
			for at := uint64(1); at < c.delay; at++ {
				w.Add(at, e)
			}
			now := uint64(0)
			b.ReportAllocs()
			for b.Loop() {
				now++
				w.Add(now+c.delay-1, e)
				if _, ok := w.Poll(now); !ok {
					b.Fatal("nothing fired")
				}
			}
		})
	}
}

// BenchmarkPollIdle is the reactor asking "anything due?" on every loop
// iteration when nothing is; step=1048576 checks that big gaps cost the same.
func BenchmarkPollIdle(b *testing.B) {
	for _, step := range []uint64{1, 1 << 20} {
		for _, bg := range backgrounds {
			b.Run(fmt.Sprintf("step=%d/background=%d", step, bg), func(b *testing.B) {
				w := New(0)
				fillBackground(w, bg, 1<<60, 1<<60)
				now := uint64(0)
				b.ReportAllocs()
				for b.Loop() {
					now += step
					if _, ok := w.Poll(now); ok {
						b.Fatal("idle wheel fired")
					}
				}
			})
		}
	}
}

// BenchmarkNextDeadline is what a reactor computes before blocking.
func BenchmarkNextDeadline(b *testing.B) {
	for _, bg := range backgrounds {
		b.Run(fmt.Sprintf("background=%d", bg), func(b *testing.B) {
			w := New(0)
			fillBackground(w, bg, 1, 1<<30)
			b.ReportAllocs()
			var sum uint64
			for b.Loop() {
				d, _ := w.NextDeadline()
				sum += d
			}
			if bg > 0 && sum == 0 {
				b.Fatal("no deadline")
			}
		})
	}
}
