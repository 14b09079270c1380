package syncprim_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// One Mutex and one Limiter shared by flows on two real reactors: a
// section may span asynchronous steps (here a read, a wait on another
// goroutine, a write), a waiting flow is resumed on its own reactor, and
// the Limiter rejects with DefenseRejected what neither its slots nor its
// queue can take.
func ExampleMutex_twoReactors() {
	g, err := reactor.NewGroup(2, reactor.Options{})
	if err != nil {
		panic(err)
	}
	g.Start()
	defer g.Close()

	m := syncprim.NewMutex(1, syncprim.Unlimited)
	counter := 0 // guarded by m: only a flow inside the section touches it
	var promises []*engine.Promise
	for i := range 20 {
		r := g.Reactors()[i%2]
		root := engine.New(r)
		root.Sync(m, func(as *engine.Steps) {
			seen := counter                 // read ...
			as.Add(func(as *engine.Steps) { // ... wait on a goroutine ...
				ext := as.External()
				go ext.Success()
			})
			as.Add(func(as *engine.Steps) { // ... write, still inside
				counter = seen + 1
				if as.Reactor() != r {
					fmt.Println("resumed on another reactor")
				}
			})
		})
		promises = append(promises, root.Promise())
	}
	for _, p := range promises {
		if _, err := p.Wait(); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("counter:", counter) // no update lost

	// A Limiter of 2 slots, 1 waiting, and a rate high enough not to
	// matter (a Limiter always limits the rate: 0 would be 1 per second).
	lim := syncprim.NewLimiter(g.Reactors()[0], syncprim.LimiterOptions{
		Concurrent: 2, MaxQueue: 1, Rate: 1000, Period: time.Second,
	})
	hold := make(chan struct{})
	var inside sync.WaitGroup
	inside.Add(2)
	promises = promises[:0]
	for i := range 4 {
		root := engine.New(g.Reactors()[i%2])
		root.Sync(lim, func(as *engine.Steps) {
			ext := as.External()
			inside.Done()
			go func() { <-hold; ext.Success() }()
		})
		promises = append(promises, root.Promise())
		if i == 1 {
			inside.Wait() // both slots taken before the next two come
		}
	}
	// The third and the fourth come from two reactors at once: one
	// takes the queue's place, the other is refused.
	third, fourth := promises[2], promises[3]
	select {
	case <-third.Done():
		third, fourth = fourth, third
	case <-fourth.Done():
	}
	_, err = fourth.Wait()
	fmt.Println("refused:", err)
	inside.Add(1) // the queued one enters once a slot is free
	close(hold)
	for _, p := range []*engine.Promise{promises[0], promises[1], third} {
		if _, err := p.Wait(); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Printf("%+v\n", m.Stats())
	// Output:
	// counter: 20
	// refused: DefenseRejected: limiter: concurrency queue is full
	// {Holders:0 Queued:0 Rejected:0}
}
