package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A cancel handler may not change its step (spec: it only releases what
// the step waits on). Error, Success or Add there used to vanish without a
// trace, where a panic there is kept in LastException; now each is kept
// there too, as an *Error InternalError that names the call, and the flow
// still ends Canceled with every other cancel handler run.
func TestCancelHandlerMisuseRecorded(t *testing.T) {
	cases := []struct {
		name string
		call func(as *engine.Steps)
		want string
	}{
		{"Error", func(as *engine.Steps) { as.Error("NotFound") }, "Error"},
		{"Success", func(as *engine.Steps) { as.Success(engine.Int(1)) }, "Success"},
		{"Add", func(as *engine.Steps) {
			as.Add(func(*engine.Steps) { t.Error("a step added by a cancel handler ran") })
		}, "Add"},
	}
	for _, c := range cases {
		r := reactor.NewManual()
		root := engine.New(r)
		outer := false
		root.Add(func(as *engine.Steps) {
			as.SetCancel(func(*engine.Steps) { outer = true })
			as.Add(func(as *engine.Steps) {
				as.SetCancel(c.call)
			})
		})
		p := root.Promise()
		r.RunUntilIdle()
		root.Cancel()
		r.RunUntilIdle()
		if _, err := p.Wait(); codeOf(err) != engine.Canceled {
			t.Errorf("%s in a cancel handler: the flow ended %v, want Canceled", c.name, err)
		}
		if !outer {
			t.Errorf("%s in a cancel handler: the outer cancel handler did not run", c.name)
		}
		var e *engine.Error
		if !errors.As(root.State().LastException, &e) || e.Code != engine.InternalError ||
			!strings.HasPrefix(e.Info, "in a cancel or finally handler: "+c.want) {
			t.Errorf("%s in a cancel handler: LastException %v, want InternalError naming it", c.name, root.State().LastException)
		}
		root.Release()
	}
}

// A cancel handler runs before the error handler when an error unwinds
// through its step: a misuse there is recorded the same way and the error
// handler still gets the error that unwinds.
func TestCancelHandlerMisuseDuringUnwind(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	var got string
	root.Add(func(as *engine.Steps) {
		as.Add(func(as *engine.Steps) {
			as.SetCancel(func(as *engine.Steps) { as.Error("FromCancel") })
			as.Add(func(as *engine.Steps) { as.Error("NotFound") })
		})
	}, func(as *engine.Steps, code string) {
		got = code
		as.Success()
	})
	p := root.Promise()
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil {
		t.Fatalf("the handler recovered, yet the flow ended %v", err)
	}
	if got != "NotFound" {
		t.Errorf("the error handler got %q, want NotFound", got)
	}
	var e *engine.Error
	if !errors.As(root.State().LastException, &e) || !strings.HasPrefix(e.Info, "in a cancel or finally handler: Error") {
		t.Errorf("LastException %v, want the cancel handler's misuse", root.State().LastException)
	}
	root.Release()
}
