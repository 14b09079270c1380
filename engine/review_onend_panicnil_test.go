package engine

import (
	"errors"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// An OnEnd that panics with nil in the middle of a batch ends its root once,
// as its InternalError, whatever GODEBUG's panicnil says (with panicnil=1
// recover returns nil, as for a Goexit: endOnEnd tells a panic by fn not
// returning, not by the value); the flows beside it end once, in order,
// and nothing escapes. The panicnil=1 half runs this test again in a child
// process.
func TestReviewOnEndPanicNilEndsTheRootOnce(t *testing.T) {
	if os.Getenv("REVBUGS9_PANICNIL_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReviewOnEndPanicNilEndsTheRootOnce$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "REVBUGS9_PANICNIL_CHILD=1", "GODEBUG=panicnil=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("GODEBUG=panicnil=1: %v\n%s", err, out)
		}
	}
	r := reactor.NewManual()
	var escaped []any
	r.SetPanicHandler(func(v any) { escaped = append(escaped, v) })
	var seq []string
	var xs [3]External
	var ps [3]*Promise
	for i, n := range []string{"a", "b", "c"} {
		root := New(r)
		X.OnEnd(root, func(_ *Steps, code string) {
			seq = append(seq, n+".end:"+code)
			if n == "b" {
				panic(nil)
			}
		})
		root.Add(func(as *Steps) { xs[i] = as.External() })
		r.Immediate(func() { ps[i] = root.Promise() })
	}
	r.RunUntilIdle()
	r.Immediate(func() {
		for i := range xs {
			xs[i].Success()
		}
	})
	func() {
		defer func() {
			if v := recover(); v != nil {
				escaped = append(escaped, v)
			}
		}()
		r.RunUntilIdle()
	}()
	if want := []string{"a.end:", "b.end:", "c.end:"}; !reflect.DeepEqual(seq, want) || len(escaped) != 0 {
		t.Fatalf("ends %q (escaped %v), want %q", seq, escaped, want)
	}
	for i, p := range ps {
		if !p.ended() {
			t.Fatalf("flow %d's Promise never ended", i)
		}
		_, err := p.Wait()
		var e *Error
		if i == 1 {
			if !errors.As(err, &e) || e.Code != InternalError {
				t.Fatalf("b's Promise got %v, want InternalError", err)
			}
		} else if err != nil {
			t.Fatalf("flow %d's Promise got %v", i, err)
		}
	}
	if s := StatsOf(r); s.FramesLive != 0 {
		t.Fatalf("%d frames live after every flow ended", s.FramesLive)
	}
}
