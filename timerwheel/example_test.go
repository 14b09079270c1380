package timerwheel_test

import (
	"fmt"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/timerwheel"
)

// A reactor loop: sleep until NextDeadline, then drain Poll. Equal
// deadlines run in Add order, and a canceled timer never runs.
func ExampleWheel() {
	w := timerwheel.New(0)
	say := func(msg string) timerwheel.Entry {
		return timerwheel.Entry{Fn: func() { fmt.Printf("tick %d: %s\n", w.Now(), msg) }}
	}
	w.Add(30, say("step timeout"))
	done := w.Add(10, say("never printed: the step finished in time"))
	w.Add(10, say("first at 10"))
	w.Add(10, say("second at 10"))
	fmt.Println("canceled:", w.Cancel(done), "again:", w.Cancel(done))

	for {
		next, ok := w.NextDeadline()
		if !ok {
			break
		}
		// A real reactor would block in epoll until next (or an event).
		for {
			e, ok := w.Poll(next)
			if !ok {
				break
			}
			e.Fn()
		}
	}
	fmt.Println("pending:", w.Len(), "now:", w.Now())
	// Output:
	// canceled: true again: false
	// tick 10: first at 10
	// tick 10: second at 10
	// tick 30: step timeout
	// pending: 0 now: 30
}

type step struct{ name string }

func onTimeout(arg unsafe.Pointer, attempt uint64) {
	s := (*step)(arg)
	fmt.Printf("%s timed out (attempt %d)\n", s.name, attempt)
}

// Cb, Arg and Aux schedule a call on an existing object without allocating
// a closure per timer.
func ExampleEntry() {
	w := timerwheel.New(1000)
	s := &step{name: "fetch"}
	w.Add(1250, timerwheel.Entry{Cb: onTimeout, Arg: unsafe.Pointer(s), Aux: 2})
	for {
		e, ok := w.Poll(2000)
		if !ok {
			break
		}
		e.Cb(e.Arg, e.Aux)
	}
	// Output:
	// fetch timed out (attempt 2)
}
