package engine

import (
	"context"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// root.extKept lets Release skip zeroing the extension of a root that only
// ever held a Promise or a Batch, whose fields the run's end clears. Every
// other setter must set it, or a pooled root would hand its name, context,
// OnEnd, DeferStart or misuse to its next holder. Each case uses the root
// one way (through the public API), runs it, releases it, and then looks
// at the pooled root's extension: all zero but a Batch's index and link,
// which are written before each use.
func TestExtKeptReleaseLeavesNothing(t *testing.T) {
	SkipIfDebug(t) // released roots are never reused there
	r := reactor.NewManual()
	step := func(as *Steps) { as.Success(Int(1)) }
	cases := []struct {
		name string
		use  func(root *Steps)
	}{
		{"promise", func(root *Steps) {
			root.Add(step)
			p := root.Promise()
			r.RunUntilIdle()
			if _, err := p.Wait(); err != nil {
				t.Fatal(err)
			}
		}},
		{"batch", func(root *Steps) {
			root.Add(step)
			var b Batch
			b.Add(root)
			b.Execute()
			r.RunUntilIdle()
			b.Wait()
		}},
		{"name and promise", func(root *Steps) {
			root.SetName("extkept")
			root.Add(step)
			p := root.Promise()
			r.RunUntilIdle()
			_, _ = p.Wait()
		}},
		{"context", func(root *Steps) {
			root.SetContext(context.Background())
			root.Add(step)
			root.Execute()
			r.RunUntilIdle()
		}},
		{"OnEnd", func(root *Steps) {
			X.OnEnd(root, func(*Steps, string) {})
			root.Add(step)
			root.Execute()
			r.RunUntilIdle()
		}},
		{"DeferStart", func(root *Steps) {
			X.DeferStart(root, true)
			root.Add(step)
			root.Execute()
			r.RunUntilIdle()
		}},
		{"misuse, never executed", func(root *Steps) {
			rootOf(root).setMisuse("extkept: a misuse")
		}},
		{"name, never executed", func(root *Steps) {
			root.SetName("extkept")
		}},
	}
	for _, c := range cases {
		root := New(r)
		rt := rootOf(root)
		c.use(root)
		root.Release()
		x := rt.more.Load()
		if x == nil {
			continue
		}
		left := x.promise != nil || x.onEnd != nil || x.misuse != "" || x.name != nil ||
			x.ctx != nil || x.stopCtx != nil || x.trace != nil || x.startAt != 0 ||
			x.batch != nil || x.deferStart
		if left || rt.extKept {
			t.Errorf("%s: the released root keeps %+v (extKept %v)", c.name, *x, rt.extKept)
		}
	}
}
