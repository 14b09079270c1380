package reactor

import (
	"math/rand/v2"
	"testing"
)

// TestNextIndexIsModulo: nextIndex is i mod n for every 32-bit count and
// group size (Next's round-robin), at the edges and at random.
func TestNextIndexIsModulo(t *testing.T) {
	sizes := []uint64{1, 2, 3, 5, 7, 8, 12, 15, 16, 17, 63, 64, 100, 255, 1000, 1 << 20, 1<<31 - 1, 1 << 31, 1<<32 - 1}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range sizes {
		magic := pickMagic(int(n))
		check := func(i uint64) {
			if got, want := nextIndex(i, magic, n), uint64(uint32(i))%n; got != want {
				t.Fatalf("nextIndex(%d, n=%d) = %d, want %d", i, n, got, want)
			}
		}
		for i := uint64(0); i < 3*n && i < 1<<12; i++ {
			check(i)
		}
		for _, i := range []uint64{1<<32 - 2, 1<<32 - 1, 1 << 32, 1<<32 + 1, 1<<63 + 5, ^uint64(0)} {
			check(i)
		}
		for range 10000 {
			check(rng.Uint64())
		}
	}
}

// TestGroupNextRoundRobin: Next visits the reactors in order, each once a
// cycle, for a group whose size is not a power of two.
func TestGroupNextRoundRobin(t *testing.T) {
	g, err := NewGroup(3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rs := g.Reactors()
	for i := range 30 {
		if got := g.Next(); got != rs[i%3] {
			t.Fatalf("Next #%d is reactor %p, want rs[%d]", i, got, i%3)
		}
	}
}

// BenchmarkGroupNext: one pick, as a fan-out makes per flow.
func BenchmarkGroupNext(b *testing.B) {
	for _, n := range []int{2, 3, 16} {
		b.Run(string(rune('0'+n/10))+string(rune('0'+n%10)), func(b *testing.B) {
			g, err := NewGroup(n, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			var sink *Reactor
			for b.Loop() {
				sink = g.Next()
			}
			_ = sink
		})
	}
}

// TestNextIndexWrap: where Next's 64-bit count passes 2^32 the pick
// starts over at reactor 0 (nextIndex's doc): for n = 3, 2^32 mod 3 = 1,
// so reactor 0 is picked twice running and reactors 1 and 2 once less.
func TestNextIndexWrap(t *testing.T) {
	const n = 3
	m := pickMagic(n)
	var got []uint64
	for i := uint64(1<<32 - 3); i < 1<<32+3; i++ {
		got = append(got, nextIndex(i, m, n))
	}
	want := []uint64{1, 2, 0, 0, 1, 2}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("picks around 2^32: %v, want %v", got, want)
		}
	}
}
