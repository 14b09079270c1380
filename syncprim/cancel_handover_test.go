package syncprim

// A Cancel and a hand-over that fall on the same instant:
// the canceled waiter's section never runs, whichever the loop runs
// first, and a Mutex slot it was handed goes back. A Throttle's new period
// hands its budget to waiters from the period timer itself, so the
// hand-over and a Cancel timer of the same tick both land before the flows
// run; a Mutex's holder hands over from its own flow.

import (
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

func TestCancelWinsOverHandOverOfSameInstant(t *testing.T) {
	for _, obj := range []string{"mutex", "throttle"} {
		for _, cancelFirst := range []bool{true, false} {
			name := obj + "/handover-first"
			if cancelFirst {
				name = obj + "/cancel-first"
			}
			t.Run(name, func(t *testing.T) {
				r := reactor.NewManual()
				var s engine.Sync
				var m *Mutex
				if obj == "mutex" {
					m = NewMutex(1, 0)
					s = m
				} else {
					s = NewThrottle(r, 1, 40*time.Millisecond, 0)
				}
				var log []string
				var ext engine.External
				a := engine.New(r)
				a.Sync(s, func(as *engine.Steps) {
					if m != nil {
						ext = as.External()
					}
				}, nil)
				b := engine.New(r)
				b.Add(func(as *engine.Steps) {
					as.SetCancel(func(*engine.Steps) { log = append(log, "b cancel") })
					as.Sync(s, func(as *engine.Steps) { log = append(log, "b section") },
						func(as *engine.Steps, code string) { log = append(log, "b error:"+code) })
				})
				b.Add(func(as *engine.Steps) { log = append(log, "b next") })
				cancel := func() { b.Cancel() }
				release := func() {
					if m != nil {
						ext.Success()
					}
				}
				if cancelFirst {
					// Before the Throttle's period timer, set by the first entry.
					r.Deferred(40*time.Millisecond, cancel)
					r.Deferred(40*time.Millisecond, release)
				}
				pa, pb := a.Promise(), b.Promise()
				r.RunUntilIdle()
				if m != nil {
					if st := m.Stats(); st.Holders != 1 || st.Queued != 1 {
						t.Fatalf("before: %+v, want one holder, one queued", st)
					}
				}
				if !cancelFirst {
					r.Deferred(40*time.Millisecond, release)
					r.Deferred(40*time.Millisecond, cancel)
				}
				r.Advance(time.Second)
				r.RunUntilIdle()
				if got := strings.Join(log, ","); got != "b cancel" {
					t.Fatalf("b ran %q, want only its cancel handler", got)
				}
				if _, err := pa.Wait(); err != nil {
					t.Fatalf("a: %v", err)
				}
				if _, err := pb.Wait(); err == nil || err.(*engine.Error).Code != engine.Canceled {
					t.Fatalf("b ended with %v, want Canceled", err)
				}
				if m != nil {
					if st := m.Stats(); st.Holders != 0 || st.Queued != 0 {
						t.Fatalf("after: %+v, want the slot back", st)
					}
				}
			})
		}
	}
}
