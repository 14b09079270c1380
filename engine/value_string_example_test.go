package engine_test

import (
	"fmt"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Values and the Args a flow ends with print as their kinds and payloads,
// so a result can go straight to a log or a test failure.
func ExampleArgs_String() {
	r := reactor.NewManual()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.Success(engine.Str("guest"), engine.Int(42))
	})
	p := root.Promise()
	r.RunUntilIdle()
	a, err := p.Wait()
	fmt.Println(a, err)
	fmt.Println(a.At(0), a.At(1).Int())
	root.Release()
	// Output:
	// [Str("guest") Int(42)] <nil>
	// Str("guest") 42
}
