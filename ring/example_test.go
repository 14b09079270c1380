package ring_test

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/asyncsteps/asyncsteps/ring"
)

// A reactor's inbox: several goroutines submit work, one goroutine runs it.
func ExampleMPSC() {
	inbox := ring.NewMPSC[func() int](64)

	var wg sync.WaitGroup
	for i := 1; i <= 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !inbox.TryPush(func() int { return i * 10 }) {
				runtime.Gosched() // Full: a real submitter might back off or shed load.
			}
		}()
	}
	wg.Wait()

	sum := 0
	for job, ok := inbox.TryPop(); ok; job, ok = inbox.TryPop() {
		sum += job()
	}
	fmt.Println("sum:", sum)
	// Output: sum: 100
}

// TryPushPos and Consumed let a submitter learn later whether the reactor
// has taken its item, without a callback or a channel per item.
func ExampleMPSC_TryPushPos() {
	q := ring.NewMPSC[string](3) // rounded up to 4
	fmt.Println("cap:", q.Cap())

	a, _ := q.TryPushPos("a")
	b, _ := q.TryPushPos("b")
	fmt.Println("positions:", a, b)

	v, _ := q.TryPop()
	fmt.Println("popped:", v)
	fmt.Println("a consumed:", a < q.Consumed())
	fmt.Println("b consumed:", b < q.Consumed())

	q.TryPush("c")
	q.TryPush("d")
	q.TryPush("e")
	fmt.Println("push into full ring:", q.TryPush("f"))
	// Output:
	// cap: 4
	// positions: 0 1
	// popped: a
	// a consumed: true
	// b consumed: false
	// push into full ring: false
}

func ExampleSPSC() {
	q := ring.NewSPSC[int](8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 5 {
			for !q.TryPush(i) {
				runtime.Gosched()
			}
		}
	}()
	<-done

	buf := make([]int, 8)
	n := q.TryPopBatch(buf)
	fmt.Println(buf[:n], q.Len())
	// Output: [0 1 2 3 4] 0
}
