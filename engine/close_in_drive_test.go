package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// TestManualCloseInsideItsDrive: a manual reactor's Close called from one
// of its own callbacks cannot end the flows there (one may be the caller),
// so the outermost drive's end does: a flow waiting on an External is
// canceled and its Promise ends Canceled once the drive returns, whichever
// drive ran the closing callback. Before, nothing did it after the drive
// and a second Close returned at once: the Promise never ended.
func TestManualCloseInsideItsDrive(t *testing.T) {
	cases := []struct {
		name  string
		drive func(r *reactor.Reactor)
	}{
		{"RunUntilIdle", func(r *reactor.Reactor) { r.RunUntilIdle() }},
		{"Iterate", func(r *reactor.Reactor) {
			for r.Iterate() {
			}
		}},
		{"Advance", func(r *reactor.Reactor) { r.Advance(time.Millisecond) }},
		{"nested RunUntilIdle", func(r *reactor.Reactor) {
			// The closing callback runs in a drive nested in another
			// callback: the nested drive's end is not the outermost.
			r.Immediate(func() { r.RunUntilIdle() })
			r.RunUntilIdle()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			root := New(r)
			canceled := 0
			root.Add(func(as *Steps) {
				as.SetCancel(func(*Steps) { canceled++ })
				as.WaitExternal()
			})
			p := root.Promise()
			r.RunUntilIdle() // the flow now waits
			select {
			case <-p.Done():
				t.Fatal("the flow ended before Close")
			default:
			}
			r.Immediate(func() { _ = r.Close() })
			c.drive(r)
			select {
			case <-p.Done():
			default:
				t.Fatal("the drive that ran Close returned and the waiting flow's Promise has not ended")
			}
			_, err := p.Wait()
			var e *Error
			if !errors.As(err, &e) || e.Code != Canceled {
				t.Errorf("Promise.Wait() error = %v, want Canceled", err)
			}
			if canceled != 1 {
				t.Errorf("cancel handler ran %d times, want 1", canceled)
			}
			root.Release()
		})
	}
}
