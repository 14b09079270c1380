package engine_test

import (
	"fmt"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The README's tour, kept runnable.
func ExampleNew() {
	r := reactor.NewManual() // deterministic loop: you drive it, time is virtual

	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.Add(func(as *engine.Steps) {
			as.Error("NotFound", "no such user") // never returns: unwinds to the handlers
		}, func(as *engine.Steps, code string) {
			fmt.Println("handled:", code, "-", as.State().ErrorInfo)
			as.Success(engine.Str("guest")) // recover: the flow goes on with a value
		})
	}).Add(func(as *engine.Steps) {
		fmt.Println("user:", as.Arg(0).Str()) // the previous step's value
	})

	p := root.Promise() // Execute, and a way to wait for the end
	r.RunUntilIdle()
	_, err := p.Wait()
	fmt.Println("error:", err)
	// Output:
	// handled: NotFound - no such user
	// user: guest
	// error: <nil>
}
