package engine_test

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// SetFinally runs its handler exactly once, however the step ends, at the
// point the step ends.
func TestSetFinally(t *testing.T) {
	tests := []struct {
		name   string
		build  func(as *engine.Steps, log *logger) // inside the step, after SetFinally
		cancel bool                                // cancel the root once it waits
		want   []string
	}{
		{
			name:  "leaf keeps implicit success",
			build: func(as *engine.Steps, log *logger) { log.add("body") },
			want:  []string{"body", "finally", "next", "handler-not-called"},
		},
		{
			name: "after its sub-steps, passing their values on",
			build: func(as *engine.Steps, log *logger) {
				as.Add(func(as *engine.Steps) { log.add("sub1") })
				as.Add(func(as *engine.Steps) { log.add("sub2"); as.Success(engine.Int(7)) })
			},
			want: []string{"sub1", "sub2", "finally", "next 7", "handler-not-called"},
		},
		{
			name: "error in a sub-step: after the error handler",
			build: func(as *engine.Steps, log *logger) {
				as.Add(func(as *engine.Steps) { as.Error("Boom") })
			},
			want: []string{"handler Boom", "finally"},
		},
		{
			name: "error handler recovers: after the handler, before the next step",
			build: func(as *engine.Steps, log *logger) {
				as.Add(func(as *engine.Steps) { as.Error("Recover") })
			},
			want: []string{"handler Recover", "finally", "next 1", "handler-not-called"},
		},
		{
			name: "error handler adds steps: after them",
			build: func(as *engine.Steps, log *logger) {
				as.Add(func(as *engine.Steps) { as.Error("AddSteps") })
			},
			want: []string{"handler AddSteps", "added", "finally", "next 2", "handler-not-called"},
		},
		{
			name: "steps added by the error handler fail: after them",
			build: func(as *engine.Steps, log *logger) {
				as.Add(func(as *engine.Steps) { as.Error("AddFailing") })
			},
			want: []string{"handler AddFailing", "added", "finally"},
		},
		{
			name: "waiting step canceled",
			build: func(as *engine.Steps, log *logger) {
				as.Add(func(as *engine.Steps) { as.WaitExternal() })
			},
			cancel: true,
			want:   []string{"finally"},
		},
		{
			name: "timeout",
			build: func(as *engine.Steps, log *logger) {
				as.SetTimeout(10 * time.Millisecond)
				as.Add(func(as *engine.Steps) { as.WaitExternal() })
			},
			want: []string{"handler Timeout", "finally"},
		},
		{
			name: "SetCancel after SetFinally: a cancel handler only",
			build: func(as *engine.Steps, log *logger) {
				as.SetCancel(func(*engine.Steps) { log.add("cancel") })
				as.Add(func(as *engine.Steps) { log.add("sub") })
			},
			want: []string{"sub", "next", "handler-not-called"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reactor.NewManual()
			var log logger
			handled := false
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				as.SetFinally(func(*engine.Steps) { log.add("finally") })
				tt.build(as, &log)
			}, func(as *engine.Steps, code string) {
				log.add("handler %s", code)
				switch code {
				case "Recover":
					as.Success(engine.Int(1))
				case "AddSteps":
					as.Add(func(as *engine.Steps) { log.add("added"); as.Success(engine.Int(2)) })
				case "AddFailing":
					as.Add(func(as *engine.Steps) { log.add("added"); as.Error("Again") })
				default:
					handled = true
				}
			}).Add(func(as *engine.Steps) {
				if as.Args().Len() > 0 {
					log.add("next %d", as.Arg(0).Int())
				} else {
					log.add("next")
				}
			})
			p := root.Promise()
			r.RunUntilIdle()
			if tt.cancel {
				root.Cancel()
				r.RunUntilIdle()
			}
			r.Advance(20 * time.Millisecond)
			<-p.Done()
			if !handled && !tt.cancel && len(tt.want) > 0 && tt.want[len(tt.want)-1] == "handler-not-called" {
				log.add("handler-not-called")
			}
			log.check(t, tt.want...)
		})
	}
}

// A step that waits and ends through its External runs its finally
// handler too, whether the result comes from the loop or from another
// goroutine (found in review: the success path dropped it as if it were a
// cancel handler).
func TestSetFinallyExternal(t *testing.T) {
	for _, off := range []bool{false, true} {
		r := reactor.NewManual()
		var log logger
		var ext engine.External
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.SetFinally(func(*engine.Steps) { log.add("finally") })
			ext = as.External()
		}).Add(func(as *engine.Steps) { log.add("next") })
		p := root.Promise()
		r.RunUntilIdle()
		if off {
			done := make(chan struct{})
			go func() { ext.Success(); close(done) }()
			<-done
		} else {
			r.Immediate(func() { ext.Success() })
		}
		r.RunUntilIdle()
		<-p.Done()
		log.check(t, "finally", "next")
	}
}
