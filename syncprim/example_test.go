package syncprim_test

import (
	"fmt"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// sleep is a step that waits d on its reactor's clock.
func sleep(d time.Duration) engine.ExecFunc {
	return func(as *engine.Steps) {
		ext := as.External()
		as.Reactor().Deferred(d, func() { ext.Success() })
	}
}

// A Mutex keeps its section to max flows at once, across as many steps as
// the section has; the others wait in line, first come first served.
func ExampleMutex() {
	r := reactor.NewManual()
	start := r.Now()
	m := syncprim.NewMutex(1, 0) // one flow at a time, unlimited queue

	for _, name := range []string{"a", "b", "c"} {
		root := engine.New(r)
		root.Sync(m, func(as *engine.Steps) {
			as.Add(func(as *engine.Steps) {
				fmt.Printf("%v: %s enters\n", r.Now().Sub(start), name)
			})
			as.Add(sleep(time.Second)) // the section spans an asynchronous wait
			as.Add(func(as *engine.Steps) {
				fmt.Printf("%v: %s leaves\n", r.Now().Sub(start), name)
			})
		})
		root.Execute()
	}
	r.RunUntilIdle()
	r.Advance(3 * time.Second)
	fmt.Printf("%+v\n", m.Stats())
	// Output:
	// 0s: a enters
	// 1s: a leaves
	// 1s: b enters
	// 2s: b leaves
	// 2s: c enters
	// 3s: c leaves
	// {Holders:0 Queued:0 Rejected:0}
}

// A Throttle lets at most max flows in per period; the others enter in
// later periods, in the order they came. Its period timer runs on the
// reactor given to NewThrottle.
func ExampleThrottle() {
	r := reactor.NewManual()
	start := r.Now()
	th := syncprim.NewThrottle(r, 2, time.Second, 0) // 2 entries per second

	for i := range 5 {
		root := engine.New(r)
		root.Sync(th, func(as *engine.Steps) {
			fmt.Printf("flow %d enters at %v\n", i, r.Now().Sub(start))
		})
		root.Execute()
	}
	r.RunUntilIdle()
	r.Advance(3 * time.Second)
	// Output:
	// flow 0 enters at 0s
	// flow 1 enters at 0s
	// flow 2 enters at 1s
	// flow 3 enters at 1s
	// flow 4 enters at 2s
}

// A Limiter bounds both concurrency and rate. A flow that would wait past
// either queue's limit fails with DefenseRejected, which the Sync's error
// handler sees like any error of the section.
func ExampleLimiter() {
	r := reactor.NewManual()
	start := r.Now()
	l := syncprim.NewLimiter(r, syncprim.LimiterOptions{
		Concurrent: 1, MaxQueue: 1, // one flow inside, one more may wait for it
		Rate: 2, Period: time.Second, // two entries per second...
		Burst: syncprim.Unlimited, // ...and any number may wait for the rate
	})

	for _, name := range []string{"a", "b", "c"} {
		root := engine.New(r)
		root.Sync(l, func(as *engine.Steps) {
			fmt.Printf("%v: %s enters\n", r.Now().Sub(start), name)
			as.Add(sleep(100 * time.Millisecond))
		}, func(as *engine.Steps, code string) {
			fmt.Printf("%v: %s: %s\n", r.Now().Sub(start), name, code)
		})
		root.Execute()
	}
	r.RunUntilIdle() // a enters, b waits for a, c is one too many
	r.Advance(200 * time.Millisecond)

	// The concurrency is free again, but this second's two entries are
	// spent: d waits for the next second.
	root := engine.New(r)
	root.Sync(l, func(as *engine.Steps) {
		fmt.Printf("%v: d enters\n", r.Now().Sub(start))
	})
	root.Execute()
	r.Advance(time.Second)
	// Output:
	// 0s: a enters
	// 0s: c: DefenseRejected
	// 100ms: b enters
	// 1s: d enters
}

// TryEnterRun lets a flow run several short sections of a Limiter in one
// step, as a server answers the pipelined requests of one read: those the
// Limiter would have let in at once run now, the rest go through Sync, each
// in its turn, as they would have with no run.
func ExampleLimiter_TryEnterRun() {
	r := reactor.NewManual()
	start := r.Now()
	l := syncprim.NewLimiter(r, syncprim.LimiterOptions{
		Concurrent: 1, MaxQueue: 0,
		Rate: 3, Period: time.Second, // three entries per second
		Burst: syncprim.Unlimited,
	})
	requests := []string{"r0", "r1", "r2", "r3", "r4"}

	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		k := l.TryEnterRun(len(requests))
		for _, req := range requests[:k] {
			fmt.Printf("%v: %s answered in the run\n", r.Now().Sub(start), req)
		}
		if k > 0 {
			l.LeaveRun()
		}
		for _, req := range requests[k:] {
			as.Sync(l, func(as *engine.Steps) {
				fmt.Printf("%v: %s answered in its own section\n", r.Now().Sub(start), req)
			})
		}
	})
	root.Execute()
	r.RunUntilIdle()
	r.Advance(2 * time.Second)
	// Output:
	// 0s: r0 answered in the run
	// 0s: r1 answered in the run
	// 0s: r2 answered in the run
	// 1s: r3 answered in its own section
	// 1s: r4 answered in its own section
}
