package engine_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// After Wait, Len is the number of results Result gives, so a loop over
// Len reads them all (it used to be 0 there, and such a loop read none);
// the next Add starts a new set.
func TestBatchLenAfterWait(t *testing.T) {
	r := reactor.NewManual()
	var b engine.Batch
	roots := make([]*engine.Steps, 3)
	for i := range roots {
		roots[i] = engine.New(r)
		roots[i].Add(func(as *engine.Steps) { as.Success(engine.Int(int64(i))) })
		b.Add(roots[i])
	}
	b.Execute()
	r.RunUntilIdle()
	b.Wait()
	if b.Len() != len(roots) {
		t.Fatalf("Len after Wait = %d, want %d", b.Len(), len(roots))
	}
	read := 0
	for i := range b.Len() {
		args, err := b.Result(i)
		if err != nil || args.At(0).Int() != int64(i) {
			t.Errorf("Result(%d) = %v %v, want [Int(%d)]", i, args, err, i)
		}
		read++
	}
	if read != len(roots) {
		t.Errorf("a loop over Len read %d results, want %d", read, len(roots))
	}
	roots[0].Add(func(as *engine.Steps) {})
	b.Add(roots[0])
	if b.Len() != 1 {
		t.Errorf("Len after the next Add = %d, want 1 (a new set)", b.Len())
	}
	b.Execute()
	r.RunUntilIdle()
	b.Wait()
	for _, root := range roots {
		root.Release()
	}
}
