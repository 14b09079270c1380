package ring

import (
	"sync"
	"testing"
)

// Close refuses every later push and counts every earlier one, also those
// racing it: popping until Consumed reaches the count takes exactly the
// items whose push succeeded.
func TestMPSCCloseCountsAcceptedPushes(t *testing.T) {
	for round := 0; round < 50; round++ {
		q := NewMPSC[int](1 << 12)
		const producers, per = 4, 500
		var wg sync.WaitGroup
		accepted := make([]int, producers)
		start := make(chan struct{})
		for p := 0; p < producers; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; i < per; i++ {
					if q.TryPush(i) {
						accepted[p]++
					}
				}
			}()
		}
		close(start)
		n := q.Close()
		popped := uint64(0)
		for q.Consumed() < n {
			if _, ok := q.TryPop(); ok {
				popped++
			}
		}
		wg.Wait()
		if _, ok := q.TryPop(); ok {
			t.Fatal("an item was accepted after Close")
		}
		total := 0
		for _, a := range accepted {
			total += a
		}
		if uint64(total) != popped || popped != n {
			t.Fatalf("accepted %d, Close counted %d, popped %d", total, n, popped)
		}
		if q.TryPush(1) || q.Len() != 0 {
			t.Fatalf("after Close: push accepted or Len %d", q.Len())
		}
		if again := q.Close(); again != n {
			t.Fatalf("second Close counted %d, first %d", again, n)
		}
	}
}
