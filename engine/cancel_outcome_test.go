package engine_test

// A cancelled flow takes no further outcome, whatever is already queued for
// it: a Cancel and a timeout, or an External's result, that fall on the
// same instant of a manual reactor, in either order, run the cancel
// handler and nothing else.

import (
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The program the bug was reported with, exactly: a Cancel from a
// Deferred timer and a step's SetTimeout due on the same tick
// (profiles/notes/2026-11-27-cancel-outcome.md).
func TestCancelThenTimeoutSameInstant(t *testing.T) {
	var log []string
	r := reactor.NewManual()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.Add(func(as *engine.Steps) {
			as.SetCancel(func(as *engine.Steps) { log = append(log, "cancel") })
			as.SetTimeout(40 * time.Millisecond)
		})
	}, func(as *engine.Steps, code string) {
		log = append(log, "error:"+code)
		as.Success()
	})
	root.Add(func(as *engine.Steps) { log = append(log, "next") })
	r.Deferred(40*time.Millisecond, func() { root.Cancel() })
	root.Execute()
	r.RunUntilIdle()
	r.Advance(time.Second)
	r.RunUntilIdle()
	if got := strings.Join(log, ","); got != "cancel" {
		t.Fatalf("ran %q, want only the cancel handler", got)
	}
}

func TestCancelWinsOverOutcomeOfSameInstant(t *testing.T) {
	for _, outcome := range []string{"timeout", "external-success", "external-error", "external-offloop"} {
		for _, cancelFirst := range []bool{true, false} {
			name := outcome + "/outcome-first"
			if cancelFirst {
				name = outcome + "/cancel-first"
			}
			t.Run(name, func(t *testing.T) {
				var log []string
				r := reactor.NewManual()
				root := engine.New(r)
				var ext engine.External
				cancelAt := func() {
					r.Deferred(40*time.Millisecond, func() { root.Cancel() })
				}
				outcomeAt := func() {
					switch outcome {
					case "external-success":
						r.Deferred(40*time.Millisecond, func() { ext.Success(engine.Int(1)) })
					case "external-error":
						r.Deferred(40*time.Millisecond, func() { ext.Error("Boom") })
					case "external-offloop":
						r.Deferred(40*time.Millisecond, func() {
							done := make(chan struct{})
							go func() { ext.Success(engine.Int(1)); close(done) }()
							<-done // its result is in the ring before the loop turns again
						})
					}
				}
				root.Add(func(as *engine.Steps) {
					as.Add(func(as *engine.Steps) {
						as.SetCancel(func(as *engine.Steps) { log = append(log, "cancel") })
						if outcome == "timeout" {
							as.SetTimeout(40 * time.Millisecond)
						} else {
							ext = as.External()
						}
						// The outcome's timer was set from inside the flow, so
						// the cancel's goes before it or after it here.
						if cancelFirst {
							cancelAt()
							outcomeAt()
						} else {
							outcomeAt()
							cancelAt()
						}
					})
				}, func(as *engine.Steps, code string) {
					log = append(log, "error:"+code)
					as.Success()
				})
				root.Add(func(as *engine.Steps) { log = append(log, "next") })
				if outcome == "timeout" && !cancelFirst {
					// The step's timer is set inside the step; a cancel
					// timer set after it falls on the same tick.
				}
				p := root.Promise()
				r.RunUntilIdle()
				r.Advance(time.Second)
				r.RunUntilIdle()
				if got := strings.Join(log, ","); got != "cancel" {
					t.Fatalf("ran %q, want only the cancel handler", got)
				}
				select {
				case <-p.Done():
				default:
					t.Fatal("the flow did not end")
				}
				if _, err := p.Wait(); err == nil || err.(*engine.Error).Code != engine.Canceled {
					t.Fatalf("ended with %v, want Canceled", err)
				}
				if s := engine.StatsOf(r); s.FramesLive != 0 {
					t.Fatalf("frames left: %+v", s)
				}
			})
		}
	}
}

// A step or an error handler that cancels its own root: the flow runs
// nothing after that callback but its cancel handlers.
func TestCancelOwnRootFromInside(t *testing.T) {
	for _, where := range []string{"step", "step then error", "error handler", "loop body then break"} {
		t.Run(where, func(t *testing.T) {
			var log []string
			r := reactor.NewManual()
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				as.SetCancel(func(*engine.Steps) { log = append(log, "cancel") })
				as.Add(func(as *engine.Steps) {
					switch where {
					case "step":
						root.Cancel()
					case "step then error":
						root.Cancel()
						as.Error("Boom")
					case "loop body then break":
						as.Repeat(3, func(as *engine.Steps, i int) {
							log = append(log, "body")
							root.Cancel()
							as.Break()
						})
					default:
						as.Error("Boom")
					}
				}, func(as *engine.Steps, code string) {
					log = append(log, "error:"+code)
					if where == "error handler" {
						root.Cancel()
					}
					as.Success()
				})
				as.Add(func(as *engine.Steps) { log = append(log, "next") })
			}, func(as *engine.Steps, code string) {
				log = append(log, "outer error:"+code)
				as.Success()
			})
			root.Add(func(as *engine.Steps) { log = append(log, "last") })
			p := root.Promise()
			r.RunUntilIdle()
			want := "cancel"
			switch where {
			case "error handler":
				want = "error:Boom,cancel"
			case "loop body then break":
				want = "body,cancel"
			}
			if got := strings.Join(log, ","); got != want {
				t.Fatalf("ran %q, want %q", got, want)
			}
			if _, err := p.Wait(); err == nil || err.(*engine.Error).Code != engine.Canceled {
				t.Fatalf("ended with %v, want Canceled", err)
			}
			if s := engine.StatsOf(r); s.FramesLive != 0 {
				t.Fatalf("frames left: %+v", s)
			}
		})
	}
}
