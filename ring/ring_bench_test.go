package ring

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// benchCap is the ring (and channel buffer) size in every benchmark: large
// enough that a producer rarely finds the ring full while the consumer is
// running, small enough to stay in L1/L2 like a reactor's inbox should.
const benchCap = 1024

// benchBatch is how many items the batch consumers take per call.
const benchBatch = 64

// split divides b.N items among producers, giving the remainder to the
// first ones, so every benchmark moves exactly b.N items.
func split(n, producers, p int) int {
	c := n / producers
	if p < n%producers {
		c++
	}
	return c
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkMPSC measures sustained throughput from producer goroutines into
// one consumer (the benchmark goroutine). One op is one item moved. Both
// sides retry with runtime.Gosched, which is what a reactor's submitters
// would do on a full ring; on the consumer side it also acts as a backoff
// that keeps a failed poll from re-reading, at full speed, the cache line a
// producer is trying to write. The channel variant uses blocking send and
// receive, which is the channel's best case for the same job: a parked
// receiver is handed items directly and then run on the sender's P.
//
// With more producers than GOMAXPROCS, goroutines share Ps, and a
// consumer's Gosched often runs a producer on the same core; those numbers
// measure same-core handoff as much as cross-core transfer.
func BenchmarkMPSC(b *testing.B) {
	for _, producers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("impl=ring/producers=%d", producers), func(b *testing.B) {
			benchMPSCRing(b, producers, false)
		})
		b.Run(fmt.Sprintf("impl=ringbatch/producers=%d", producers), func(b *testing.B) {
			benchMPSCRing(b, producers, true)
		})
		b.Run(fmt.Sprintf("impl=chan/producers=%d", producers), func(b *testing.B) {
			benchChan(b, producers)
		})
	}
}

func benchMPSCRing(b *testing.B, producers int, batch bool) {
	q := NewMPSC[uint64](benchCap)
	dst := make([]uint64, benchBatch)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func(count int) {
			defer wg.Done()
			for i := range count {
				for !q.TryPush(uint64(i)) {
					runtime.Gosched()
				}
			}
		}(split(b.N, producers, p))
	}
	var sum uint64
	for got := 0; got < b.N; {
		if batch {
			n := q.TryPopBatch(dst)
			if n == 0 {
				runtime.Gosched()
				continue
			}
			for _, v := range dst[:n] {
				sum += v
			}
			got += n
			continue
		}
		v, ok := q.TryPop()
		if !ok {
			runtime.Gosched()
			continue
		}
		sum += v
		got++
	}
	wg.Wait()
	b.StopTimer()
	checkSum(b, sum, producers)
	reportRate(b)
}

// BenchmarkSPSC is BenchmarkMPSC with exactly one producer.
func BenchmarkSPSC(b *testing.B) {
	b.Run("impl=ring", func(b *testing.B) { benchSPSCRing(b, false) })
	b.Run("impl=ringbatch", func(b *testing.B) { benchSPSCRing(b, true) })
	b.Run("impl=chan", func(b *testing.B) { benchChan(b, 1) })
}

func benchSPSCRing(b *testing.B, batch bool) {
	q := NewSPSC[uint64](benchCap)
	dst := make([]uint64, benchBatch)
	b.ReportAllocs()
	b.ResetTimer()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range b.N {
			for !q.TryPush(uint64(i)) {
				runtime.Gosched()
			}
		}
	}()
	var sum uint64
	for got := 0; got < b.N; {
		if batch {
			n := q.TryPopBatch(dst)
			if n == 0 {
				runtime.Gosched()
				continue
			}
			for _, v := range dst[:n] {
				sum += v
			}
			got += n
			continue
		}
		v, ok := q.TryPop()
		if !ok {
			runtime.Gosched()
			continue
		}
		sum += v
		got++
	}
	<-done
	b.StopTimer()
	checkSum(b, sum, 1)
	reportRate(b)
}

func benchChan(b *testing.B, producers int) {
	ch := make(chan uint64, benchCap)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func(count int) {
			defer wg.Done()
			for i := range count {
				ch <- uint64(i)
			}
		}(split(b.N, producers, p))
	}
	var sum uint64
	for range b.N {
		sum += <-ch
	}
	wg.Wait()
	b.StopTimer()
	checkSum(b, sum, producers)
	reportRate(b)
}

// checkSum keeps the consumer's work observable and catches a benchmark
// that lost or duplicated items: producer p pushes 0..count-1.
func checkSum(b *testing.B, sum uint64, producers int) {
	var want uint64
	for p := range producers {
		c := uint64(split(b.N, producers, p))
		want += c * (c - 1) / 2
	}
	if sum != want {
		b.Fatalf("consumer sum = %d, want %d", sum, want)
	}
}

// BenchmarkPushPop measures one push and one pop on the same goroutine:
// the per-operation cost without cross-core traffic.
func BenchmarkPushPop(b *testing.B) {
	b.Run("impl=mpsc", func(b *testing.B) {
		q := NewMPSC[uint64](benchCap)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			q.TryPush(uint64(i))
			q.TryPop()
		}
	})
	b.Run("impl=spsc", func(b *testing.B) {
		q := NewSPSC[uint64](benchCap)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			q.TryPush(uint64(i))
			q.TryPop()
		}
	})
	b.Run("impl=chan", func(b *testing.B) {
		ch := make(chan uint64, benchCap)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			ch <- uint64(i)
			<-ch
		}
	})
}
