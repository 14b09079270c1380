package abi_test

import (
	"fmt"

	"github.com/asyncsteps/asyncsteps/abi/internal/ctest"
	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A Go flow with a C step in the middle: ctest.Add adds, through
// abi.Binary(root) and the FutoInAsyncSteps vtable, a C function that
// succeeds with its two integer arguments + 1 (as INT32).
func Example_cStep() {
	r := reactor.NewManual()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { as.Success(engine.Int(1), engine.Int(10)) })
	ctest.Add(root, ctest.Inc, 0, ctest.NoHandler)
	root.Add(func(as *engine.Steps) { fmt.Println(as.Arg(0).Int(), as.Arg(1).Int()) })
	root.Execute()
	r.RunUntilIdle()
	root.Release()
	// Output: 2 11
}
