package goid

import (
	"sync"
	"testing"
)

func TestCurrentStableAndDistinct(t *testing.T) {
	me := Current()
	if me == 0 {
		t.Fatal("Current() = 0")
	}
	if again := Current(); again != me {
		t.Fatalf("Current changed on the same goroutine: %#x then %#x", me, again)
	}
	const n = 16
	ids := make([]uintptr, n)
	var wg, taken, release sync.WaitGroup
	release.Add(1)
	for i := range ids {
		wg.Add(1)
		taken.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = Current()
			taken.Done()
			release.Wait() // keep every goroutine alive until all ids are taken
		}()
	}
	taken.Wait()
	release.Done()
	wg.Wait()
	seen := map[uintptr]bool{me: true}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("two live goroutines share identity %#x", id)
		}
		seen[id] = true
	}
}

func BenchmarkCurrent(b *testing.B) {
	b.ReportAllocs()
	var x uintptr
	for i := 0; i < b.N; i++ {
		x += Current()
	}
	_ = x
}
