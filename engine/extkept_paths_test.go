package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// releasedExtLeft reports what a released pooled root's extension still
// holds that its next holder could see: TestExtKeptReleaseLeavesNothing's
// test, and a Batch's link to another root, which would keep that root
// (and whatever it holds) reachable from the pool.
func releasedExtLeft(rt *root) (string, bool) {
	x := rt.more.Load()
	if x == nil {
		return "", false
	}
	switch {
	case x.promise != nil:
		return "a Promise", true
	case x.batch != nil:
		return "a Batch", true
	case x.batchNext != nil:
		return "a Batch's link to another root", true
	case x.onEnd != nil || x.misuse != "" || x.name != nil || x.ctx != nil ||
		x.stopCtx != nil || x.trace != nil || x.startAt != 0 || x.deferStart:
		return "a field extra() sets", true
	case rt.extKept:
		return "extKept", true
	}
	return "", false
}

// Release skips zeroing the extension of a root that only ever held a
// Promise or a Batch (extKept false), because the run's end clears those.
// These are the ends that are not a run's plain end on its loop: released
// while running (the release at the end), a root with no steps, a cancel
// before the start, a reactor closed before the start (the flow ended
// off the loop), a Batch whose reactor is closed, a Batch entry refused.
// After each, the released root's extension must hold nothing.
func TestExtKeptReleaseAfterEveryWaitedEnd(t *testing.T) {
	SkipIfDebug(t) // released roots are never reused there
	step := func(as *Steps) { as.Success(Int(1)) }
	cases := []struct {
		name string
		use  func(t *testing.T, r *reactor.Reactor, root *Steps)
	}{
		{"promise, released while running", func(t *testing.T, r *reactor.Reactor, root *Steps) {
			root.Add(step)
			p := root.Promise()
			root.Release()
			r.RunUntilIdle()
			_, _ = p.Wait()
		}},
		{"promise, no steps", func(t *testing.T, r *reactor.Reactor, root *Steps) {
			p := root.Promise()
			r.RunUntilIdle()
			_, _ = p.Wait()
			root.Release()
		}},
		{"promise, canceled before its start", func(t *testing.T, r *reactor.Reactor, root *Steps) {
			root.Add(step)
			p := root.Promise()
			root.Cancel()
			r.RunUntilIdle()
			_, _ = p.Wait()
			root.Release()
		}},
		{"promise, reactor closed", func(t *testing.T, r *reactor.Reactor, root *Steps) {
			_ = r.Close()
			root.Add(step)
			p := root.Promise()
			if _, err := p.Wait(); err == nil {
				t.Fatal("a Promise on a closed reactor succeeded")
			}
			root.Release()
		}},
		{"promise, reactor closed while queued", func(t *testing.T, r *reactor.Reactor, root *Steps) {
			root.Add(step)
			p := root.Promise()
			_ = r.Close()
			r.RunUntilIdle()
			_, _ = p.Wait()
			root.Release()
		}},
		{"batch, reactor closed", func(t *testing.T, r *reactor.Reactor, root *Steps) {
			other := New(r)
			other.Add(step)
			root.Add(step)
			_ = r.Close()
			var b Batch
			b.Add(root)
			b.Add(other)
			b.Execute()
			b.Wait()
			other.Release()
			root.Release()
		}},
		{"batch of two, released while running", func(t *testing.T, r *reactor.Reactor, root *Steps) {
			other := New(r)
			other.Add(step)
			root.Add(step)
			var b Batch
			b.Add(root)
			b.Add(other)
			b.Execute()
			root.Release()
			other.Release()
			r.RunUntilIdle()
			b.Wait()
		}},
		{"batch, canceled before its start", func(t *testing.T, r *reactor.Reactor, root *Steps) {
			root.Add(step)
			var b Batch
			b.Add(root)
			b.Execute()
			root.Cancel()
			r.RunUntilIdle()
			b.Wait()
			root.Release()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			defer r.Close()
			root := New(r)
			rt := rootOf(root)
			c.use(t, r, root)
			if !rt.isReleased() {
				t.Fatal("the root was not released")
			}
			if what, left := releasedExtLeft(rt); left {
				t.Errorf("the released root keeps %s: %+v", what, *rt.more.Load())
			}
		})
	}
}
