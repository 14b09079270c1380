package engine_test

// Review tests of AddLocked (synckit_lock.go): ends of an entered section
// that TestAddLockedLeavesOnEveryEnd does not cover.

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

func TestAddLockedLeavesOnMoreEnds(t *testing.T) {
	for _, tc := range []struct {
		end  string
		code string
	}{
		{"panic", engine.InternalError},
		{"error-no-handler", "Boom"},
		{"handler-rethrows", "Other"},
		{"continue", ""},
		{"branch-success", ""},
		{"branch-error", "Boom"},
		{"branch-sibling-fails", "Boom"},
		{"branch-sub", ""},
		{"sub-panics", engine.InternalError},
		{"nested-same-object-error", "Boom"},
	} {
		t.Run(tc.end, func(t *testing.T) {
			r := reactor.NewManual()
			var log logger
			s := newSlot(&log)
			var onerror engine.ErrorFunc
			section := func(as *engine.Steps) {
				switch tc.end {
				case "panic":
					panic("section panics")
				case "error-no-handler", "branch-error":
					as.Error("Boom")
				case "handler-rethrows":
					onerror = func(as *engine.Steps, code string) { as.Error("Other") }
					as.Error("Boom")
				case "continue":
					as.Continue()
				case "branch-sub":
					as.Add(func(*engine.Steps) {})
				case "sub-panics":
					as.Add(func(*engine.Steps) { panic("sub panics") })
				case "nested-same-object-error":
					as.Sync(s, func(as *engine.Steps) { as.Error("Boom") })
				}
			}
			if tc.end == "handler-rethrows" {
				onerror = func(as *engine.Steps, code string) { as.Error("Other") }
			}
			root := engine.New(r)
			switch tc.end {
			case "continue":
				root.Repeat(3, func(as *engine.Steps, _ int) { as.Sync(s, section) })
			case "branch-success", "branch-error", "branch-sub":
				p := root.Parallel()
				p.Sync(s, section)
				p.Add(func(*engine.Steps) {})
			case "branch-sibling-fails":
				p := root.Parallel()
				p.Sync(s, func(as *engine.Steps) { as.SetCancel(func(*engine.Steps) {}) })
				p.Add(func(as *engine.Steps) { as.Error("Boom") })
			default:
				root.Sync(s, section, onerror)
			}
			p := root.Promise()
			r.RunUntilIdle()
			_, err := waitDone(t, p)
			if tc.code == "" {
				wantNoErr(t, err)
			} else {
				wantCode(t, err, tc.code)
			}
			if s.inside != 0 {
				t.Errorf("inside = %d after the flow ended, want 0", s.inside)
			}
		})
	}
}
