package reactor_test

import (
	"fmt"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A loop callback takes its reactor's Loop once and schedules and drains
// through it, without the goroutine identity each Reactor method asks.
func ExampleReactor_Loop() {
	r := reactor.NewManual()
	r.Immediate(func() {
		l, ok := r.Loop() // true: this callback runs on r's loop
		if !ok {
			return
		}
		for i := range 3 {
			l.Immediate(func() { fmt.Println("task", i) })
		}
		l.RunUntilIdle() // runs the three tasks before it returns
		fmt.Println("drained")
	})
	r.RunUntilIdle()
	_, ok := r.Loop() // the test goroutine between drives: not the loop
	fmt.Println("off the loop:", ok)
	// Output:
	// task 0
	// task 1
	// task 2
	// drained
	// off the loop: false
}
