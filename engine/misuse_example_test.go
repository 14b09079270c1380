package engine_test

import (
	"errors"
	"fmt"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Mistakes inside a flow fail that flow only, with InternalError and an
// ErrorInfo that names the mistake; a panic in a step does the same, with
// the panic's value in LastException. The process and other flows go on.
func Example_misuse() {
	r := reactor.NewManual()
	var kept *engine.Steps
	mistakes := []struct {
		name string
		step engine.ExecFunc
	}{
		{"nil step", func(as *engine.Steps) { as.Add(nil) }},
		{"five values", func(as *engine.Steps) {
			v := engine.Int(1)
			as.Success(v, v, v, v, v)
		}},
		{"Break outside a loop", func(as *engine.Steps) { as.Break() }},
		{"unknown label", func(as *engine.Steps) {
			as.Loop(func(as *engine.Steps) { as.Break("outer") }, "inner")
		}},
		{"accessor kept past its step", func(as *engine.Steps) {
			as.Add(func(as *engine.Steps) { kept = as })
			as.Add(func(as *engine.Steps) { kept.Success() })
		}},
		{"panic", func(as *engine.Steps) { panic("boom") }},
	}
	for _, m := range mistakes {
		root := engine.New(r)
		root.Add(m.step)
		p := root.Promise()
		r.RunUntilIdle()
		_, err := p.Wait()
		fmt.Printf("%s: %v\n", m.name, err)
		var pe *engine.PanicError
		if errors.As(root.State().LastException, &pe) {
			fmt.Printf("  LastException: PanicError{%v}\n", pe.Value)
		}
		root.Release()
	}
	// Output:
	// nil step: InternalError: Add: nil ExecFunc
	// five values: InternalError: Success: more than 4 values
	// Break outside a loop: InternalError: Break: not inside a loop of this flow
	// unknown label: InternalError: Break: no enclosing loop labelled outer
	// accessor kept past its step: InternalError: Success: not called on the running step's accessor (kept past its step, or called outside its callback)
	// panic: InternalError: boom
	//   LastException: PanicError{boom}
}
