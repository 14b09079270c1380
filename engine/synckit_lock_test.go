package engine_test

// Tests of Lock and AddLocked (synckit_lock.go): the one-step uncontended
// section of a Sync object, its Leave on every end, and its slow path.

import (
	"slices"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// slot is a minimal object over Lock: one flow inside; a second one, or a
// reentrance, takes the slow path, which logs and runs f as a sub-step.
type slot struct {
	lock   engine.Lock[slot]
	inside int
	log    *logger
}

func newSlot(log *logger) *slot {
	s := &slot{log: log}
	s.lock.Init(s, slotEnter, slotLeave, slotSlow)
	return s
}

func (s *slot) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	engine.AddLocked(as, &s.lock, f, onerror)
}

func slotEnter(as *engine.Steps, s *slot) bool {
	if s.inside > 0 {
		return false
	}
	s.inside++
	return true
}

func slotLeave(as *engine.Steps, s *slot) {
	s.inside--
	if s.log != nil {
		s.log.add("leave")
	}
}

func slotSlow(as *engine.Steps, s *slot, f engine.ExecFunc) {
	if s.log != nil {
		s.log.add("slow")
	}
	if engine.Bound[slot](as) != s {
		as.Error(engine.InternalError, "slow path not bound to its object")
	}
	as.ForwardArgs()
	as.Add(f)
}

func TestAddLockedLeavesOnEveryEnd(t *testing.T) {
	for _, tc := range []struct {
		end  string
		want []string
		code string
	}{
		{"success", []string{"in 7", "leave"}, ""},
		{"success-sub", []string{"in 7", "sub", "leave"}, ""},
		{"cancel-handler-on-success", []string{"in 7", "leave"}, ""},
		{"finally", []string{"in 7", "finally", "leave"}, ""},
		{"error", []string{"in 7", "cancel", "handler Boom", "leave"}, "Boom"},
		{"error-sub", []string{"in 7", "handler Boom", "leave"}, "Boom"},
		{"recovered", []string{"in 7", "handler Boom", "after", "leave", "next"}, ""},
		{"timeout", []string{"in 7", "handler Timeout", "leave"}, engine.Timeout},
		{"cancel", []string{"in 7", "cancel", "leave"}, engine.Canceled},
		{"external", []string{"in 7", "leave", "next"}, ""},
		{"break", []string{"in 0", "leave", "next"}, ""}, // an iteration receives no values
	} {
		t.Run(tc.end, func(t *testing.T) {
			r := reactor.NewManual()
			var log logger
			s := newSlot(&log)
			var ext engine.External
			section := func(as *engine.Steps) {
				log.add("in %d", as.Arg(0).Int())
				switch tc.end {
				case "success-sub":
					as.Add(log.fn("sub"))
				case "cancel-handler-on-success":
					as.SetCancel(func(*engine.Steps) { log.add("cancel") })
					as.Success()
				case "finally":
					as.SetFinally(func(*engine.Steps) { log.add("finally") })
				case "error":
					as.SetCancel(func(*engine.Steps) { log.add("cancel") })
					as.Error("Boom")
				case "error-sub", "recovered":
					as.Add(func(as *engine.Steps) { as.Error("Boom") })
				case "timeout":
					as.SetTimeout(time.Millisecond)
				case "cancel":
					as.SetCancel(func(*engine.Steps) { log.add("cancel") })
				case "external":
					ext = as.External()
				case "break":
					as.Break()
				}
			}
			onerror := func(as *engine.Steps, code string) {
				log.add("handler %s", code)
				if tc.end == "recovered" {
					as.Add(log.fn("after"))
				}
			}
			root := engine.New(r)
			root.Add(func(as *engine.Steps) { as.Success(engine.Int(7)) })
			if tc.end == "break" {
				root.Repeat(3, func(as *engine.Steps, _ int) { as.Sync(s, section) })
			} else {
				root.Sync(s, section, onerror)
			}
			root.Add(log.fn("next"))
			p := root.Promise()
			switch tc.end {
			case "timeout":
				r.RunUntilIdle()
				r.Advance(2 * time.Millisecond)
			case "cancel":
				r.RunUntilIdle()
				root.Cancel()
			case "external":
				r.RunUntilIdle()
				ext.Success()
			}
			r.RunUntilIdle()
			_, err := waitDone(t, p)
			want := tc.want
			if tc.code == "" {
				wantNoErr(t, err)
				if tc.end != "external" && tc.end != "break" && tc.end != "recovered" {
					want = append(want, "next")
				}
			} else {
				wantCode(t, err, tc.code)
			}
			log.check(t, want...)
			if s.inside != 0 {
				t.Errorf("inside = %d after the flow ended, want 0", s.inside)
			}
		})
	}
}

func TestAddLockedSlowPath(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	s := newSlot(&log)
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { as.Success(engine.Int(3)) })
	root.Sync(s, func(as *engine.Steps) {
		log.add("outer %d", as.Arg(0).Int())
		as.Success(engine.Int(4))
		as = nil
	})
	root.Sync(s, func(as *engine.Steps) {
		log.add("outer2 %d", as.Arg(0).Int())
		as.Sync(s, func(as *engine.Steps) { log.add("nested %d", as.Arg(0).Int()) }) // inside: slow path
		as.Add(log.fn("tail"))
	})
	p := root.Promise()
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantNoErr(t, err)
	// The nested Sync has no values to forward: the outer step took them.
	log.check(t, "outer 3", "leave", "outer2 4", "slow", "nested 0", "tail", "leave")
	if s.inside != 0 {
		t.Errorf("inside = %d, want 0", s.inside)
	}
}

// A Leave must not panic; if it does, a section that ended plainly fails
// its flow with InternalError, and one that ended by error or cancel keeps
// its flow's outcome, with the panic recorded in LastException.
func TestAddLockedPanickingLeave(t *testing.T) {
	for _, tc := range []struct {
		end, code string
		ranAfter  bool
	}{
		{"success", engine.InternalError, false},
		{"success-sub", engine.InternalError, false}, // ends through advance, not advanceFast
		{"error", "Boom", false},
	} {
		t.Run(tc.end, func(t *testing.T) {
			r := reactor.NewManual()
			s := &slot{}
			s.lock.Init(s, slotEnter, func(*engine.Steps, *slot) { panic("leave failed") }, slotSlow)
			var ran bool
			root := engine.New(r)
			root.Sync(s, func(as *engine.Steps) {
				switch tc.end {
				case "success-sub":
					as.Add(func(*engine.Steps) {})
				case "error":
					as.Error("Boom")
				}
			})
			root.Add(func(as *engine.Steps) { ran = true })
			p := root.Promise()
			r.RunUntilIdle()
			_, err := waitDone(t, p)
			wantCode(t, err, tc.code)
			if ran != tc.ranAfter {
				t.Errorf("the step after the section ran: %v, want %v", ran, tc.ranAfter)
			}
			if tc.code != engine.InternalError {
				if _, ok := root.State().LastException.(*engine.PanicError); !ok {
					t.Errorf("LastException = %v, want the Leave's *PanicError", root.State().LastException)
				}
			}
		})
	}
}

func TestAddLockedMisuse(t *testing.T) {
	r := reactor.NewManual()
	var unset engine.Lock[slot]
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { engine.AddLocked(as, &unset, func(*engine.Steps) {}, nil) })
	p := root.Promise()
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantCode(t, err, engine.InternalError)

	defer func() {
		if v := recover(); v == nil {
			t.Error("Init with a nil leave func did not panic")
		}
	}()
	var l engine.Lock[slot]
	l.Init(&slot{}, slotEnter, nil, slotSlow)
}

func TestAddLockedNoAllocs(t *testing.T) {
	engine.SkipIfDebug(t)
	r := reactor.NewManual()
	s := newSlot(nil)
	var n int
	section := func(as *engine.Steps) { n++ }
	step := func(as *engine.Steps) { as.Sync(s, section) }
	run := func() {
		root := engine.New(r)
		root.Add(step)
		root.Execute()
		r.RunUntilIdle()
		root.Release()
	}
	run()
	if a := testing.AllocsPerRun(200, run); a != 0 {
		t.Errorf("%v allocations per section, want 0", a)
	}
	if n != 202 || s.inside != 0 {
		t.Errorf("%d sections ran, %d inside; want 202, 0", n, s.inside)
	}
}

func TestAddLockedHolds(t *testing.T) {
	r := reactor.NewManual()
	s := newSlot(nil)
	var got []bool
	root := engine.New(r)
	root.Sync(s, func(as *engine.Steps) {
		got = append(got, as.Holds(s)) // the section's own step
		as.Add(func(as *engine.Steps) { got = append(got, as.Holds(s)) })
		p := as.Parallel()
		p.Add(func(as *engine.Steps) { got = append(got, as.Holds(s)) }) // a branch inherits nothing
	}, func(as *engine.Steps, code string) {})
	root.Add(func(as *engine.Steps) { got = append(got, as.Holds(s)) })
	p := root.Promise()
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantNoErr(t, err)
	if want := []bool{true, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("Holds = %v, want %v (section, sub-step, branch, after)", got, want)
	}
}

// TestAddLockedLeavesOnMoreEnds: ends of an entered section (AddLocked)
// that TestAddLockedLeavesOnEveryEnd does not cover.
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
