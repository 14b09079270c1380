//go:build linux

package engine_test

import (
	"fmt"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A goroutine fans 1,000 flows out over a group of reactors and sums their
// results: one post per reactor, one wake-up of the waiter, no allocation
// per flow once the Batch and the root pools are warm.
func ExampleBatch() {
	g, err := reactor.NewGroup(2, reactor.Options{})
	if err != nil {
		panic(err)
	}
	g.Start()
	defer g.Close()

	var b engine.Batch
	roots := make([]*engine.Steps, 1000)
	for i := range roots {
		roots[i] = engine.New(g.Next())
		roots[i].Add(func(as *engine.Steps) { as.Success(engine.Int(int64(i))) })
		b.Add(roots[i])
	}
	b.Execute()
	b.Wait()
	sum := int64(0)
	for i, root := range roots {
		args, err := b.Result(i)
		if err != nil {
			panic(err)
		}
		sum += args.At(0).Int()
		root.Release()
	}
	fmt.Println(sum)
	// Output: 499500
}
