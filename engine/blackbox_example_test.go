package engine_test

import (
	"fmt"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A typical flow: sequential steps passing values, a loop, an error that an
// error handler turns into a fallback value.
func Example() {
	r := reactor.NewManual()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		fmt.Println("load: 3 items")
		as.Success(engine.Int(3))
	})
	root.Add(func(as *engine.Steps) {
		n := int(as.Arg(0).Int())
		as.Repeat(n, func(as *engine.Steps, i int) {
			fmt.Println("process item", i)
		})
		as.Add(func(as *engine.Steps) {
			as.Error(engine.NotImplemented, "no report format")
		})
	}, func(as *engine.Steps, code string) {
		fmt.Println("handled:", code, "-", as.State().ErrorInfo)
		as.Success(engine.Str("plain text"))
	})
	root.Add(func(as *engine.Steps) {
		fmt.Println("report as", as.Arg(0).Str())
		as.Success(engine.Bool(true))
	})

	p := root.Promise()
	r.RunUntilIdle()
	args, err := p.Wait()
	fmt.Println("done:", args.At(0).Bool(), err)
	// Output:
	// load: 3 items
	// process item 0
	// process item 1
	// process item 2
	// handled: NotImplemented - no report format
	// report as plain text
	// done: true <nil>
}

// Waiting for an external event with a time limit, on virtual time.
func ExampleSteps_SetTimeout() {
	r := reactor.NewManual()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.SetTimeout(100 * time.Millisecond)
		ext := as.External()
		r.Deferred(30*time.Millisecond, func() { ext.Success(engine.Str("reply")) })
	})
	root.Add(func(as *engine.Steps) {
		as.SetTimeout(100 * time.Millisecond)
		as.SetCancel(func(*engine.Steps) { fmt.Println("cancel: stop waiting") })
	}, func(as *engine.Steps, code string) {
		fmt.Println("second step:", code)
	})

	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(30 * time.Millisecond)
	fmt.Println("first step done")
	r.Advance(100 * time.Millisecond)
	_, err := p.Wait()
	fmt.Println("flow:", err)
	// Output:
	// first step done
	// cancel: stop waiting
	// second step: Timeout
	// flow: Timeout
}

// Loops with labels: Continue of the outer loop from inside the inner one.
func ExampleSteps_Loop() {
	r := reactor.NewManual()
	root := engine.New(r)
	root.Repeat(2, func(as *engine.Steps, i int) {
		n := 0
		as.Loop(func(as *engine.Steps) {
			n++
			fmt.Println("outer", i, "inner", n)
			if n == 2 {
				as.Continue("OUTER")
			}
		})
	}, "OUTER")
	engine.ForEachMap(root, map[string]int{"b": 2, "a": 1}, func(as *engine.Steps, k string, v int) {
		fmt.Println(k, "=", v)
	})
	p := root.Promise()
	r.RunUntilIdle()
	_, err := p.Wait()
	fmt.Println("err:", err)
	// Output:
	// outer 0 inner 1
	// outer 0 inner 2
	// outer 1 inner 1
	// outer 1 inner 2
	// a = 1
	// b = 2
	// err: <nil>
}

// Parallel branches share the flow's state; the next step reads it.
func ExampleSteps_Parallel() {
	r := reactor.NewManual()
	root := engine.New(r)
	root.Parallel().
		Add(func(as *engine.Steps) { as.Set("left", 1) }).
		Add(func(as *engine.Steps) { as.Set("right", 2) })
	root.Add(func(as *engine.Steps) {
		fmt.Println("sum:", as.Get("left").(int)+as.Get("right").(int))
	})
	p := root.Promise()
	r.RunUntilIdle()
	_, err := p.Wait()
	fmt.Println("err:", err)
	// Output:
	// sum: 3
	// err: <nil>
}
