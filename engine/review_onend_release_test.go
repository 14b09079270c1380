package engine

import (
	"errors"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// An OnEnd that releases its root and then panics: the run ends once, as
// its InternalError (the Promise gets it), and the root is released once,
// after the end (RootsLive back where it was), with nothing left live.
func TestReviewOnEndReleaseThenPanic(t *testing.T) {
	r := reactor.NewManual()
	var escaped []any
	r.SetPanicHandler(func(v any) { escaped = append(escaped, v) })
	before := StatsOf(r).RootsLive
	b := New(r)
	ends := 0
	X.OnEnd(b, func(root *Steps, _ string) {
		ends++
		root.Release()
		panic("after release")
	})
	b.Add(func(*Steps) {})
	var p *Promise
	r.Immediate(func() { p = b.Promise() })
	r.RunUntilIdle()
	if len(escaped) != 0 || ends != 1 {
		t.Fatalf("OnEnd ran %d times, escaped %v", ends, escaped)
	}
	var e *Error
	if _, err := p.Wait(); !errors.As(err, &e) || e.Code != InternalError || e.Info != "after release" {
		t.Fatalf("Promise got %v, want InternalError \"after release\"", err)
	}
	if !rootOf(b).isReleased() {
		t.Fatal("the root is still valid: OnEnd's Release was lost")
	}
	if s := StatsOf(r); s.RootsLive != before || s.FramesLive != 0 {
		t.Fatalf("RootsLive %d (before %d), FramesLive %d: released once, nothing live", s.RootsLive, before, s.FramesLive)
	}
	// The pool hands the root out again, whole.
	c := New(r)
	ran := false
	c.Add(func(*Steps) { ran = true })
	r.Immediate(func() { p = c.Promise() })
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil || !ran {
		t.Fatalf("a root from the pool after: ran %v, %v", ran, err)
	}
}
