package engine

import (
	"errors"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A step of flow A that executes an empty root B on the loop ends B inside
// A's callback (prepareStartSlow: no step to queue), so B's OnEnd runs with
// A's step current. A raise of A's step from there (asA.Error, or any
// misuse, which fails the running step: misuse raises on e.cur) unwinds
// through B's OnEnd. It is A's raise, not a panic of B's OnEnd: A fails with
// it, once, and B's run keeps its own outcome (success), with no
// LastException made of the engine's raise signal.
func TestReviewOnEndRaiseOfTheCurrentStepIsNotTheRootsPanic(t *testing.T) {
	r := reactor.NewManual()
	var escaped []any
	r.SetPanicHandler(func(v any) { escaped = append(escaped, v) })
	a, b := New(r), New(r)
	var asA *Steps
	ends := 0
	X.OnEnd(b, func(_ *Steps, code string) {
		ends++
		asA.Error("Mine", "raised by A's step, from B's OnEnd")
	})
	var pB *Promise
	a.Add(func(as *Steps) {
		asA = as
		pB = b.Promise() // B has no step: it ends here, inside A's callback
	})
	var pA *Promise
	r.Immediate(func() { pA = a.Promise() })
	r.RunUntilIdle()
	if len(escaped) != 0 {
		t.Fatalf("escaped to the panic handler: %v", escaped)
	}
	if ends != 1 {
		t.Fatalf("B's OnEnd ran %d times, want 1", ends)
	}
	var e *Error
	if _, err := pA.Wait(); !errors.As(err, &e) || e.Code != "Mine" {
		t.Fatalf("A's Promise got %v, want its own raise Mine", err)
	}
	if _, err := pB.Wait(); err != nil {
		t.Fatalf("B's Promise got %v (LastException %v), want B's own success: the raise was A's", err, b.State().LastException)
	}
	if s := StatsOf(r); s.FramesLive != 0 {
		t.Fatalf("%d frames live after both flows ended", s.FramesLive)
	}
}
