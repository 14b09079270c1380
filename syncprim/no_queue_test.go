package syncprim

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// NoQueue says the spec's max_queue=0 to NewMutex and NewThrottle (whose
// own 0 is the spec's null, unlimited) and to a Limiter (whose 0 means the
// same): a flow that cannot enter at once is rejected, nobody waits.
func TestNoQueue(t *testing.T) {
	for _, tc := range []struct {
		name     string
		make     func(r *reactor.Reactor) engine.Sync
		rejected bool
	}{
		{"mutex NoQueue", func(*reactor.Reactor) engine.Sync { return NewMutex(1, NoQueue) }, true},
		{"mutex 0", func(*reactor.Reactor) engine.Sync { return NewMutex(1, 0) }, false},
		{"mutex Unlimited", func(*reactor.Reactor) engine.Sync { return NewMutex(1, Unlimited) }, false},
		{"throttle NoQueue", func(r *reactor.Reactor) engine.Sync { return NewThrottle(r, 1, time.Second, NoQueue) }, true},
		{"throttle 0", func(r *reactor.Reactor) engine.Sync { return NewThrottle(r, 1, time.Second, 0) }, false},
		{"limiter NoQueue", func(r *reactor.Reactor) engine.Sync {
			return NewLimiter(r, LimiterOptions{Concurrent: 1, MaxQueue: NoQueue, Rate: 10})
		}, true},
		{"limiter 0", func(r *reactor.Reactor) engine.Sync {
			return NewLimiter(r, LimiterOptions{Concurrent: 1, MaxQueue: 0, Rate: 10})
		}, true},
		{"limiter Unlimited", func(r *reactor.Reactor) engine.Sync {
			return NewLimiter(r, LimiterOptions{Concurrent: 1, MaxQueue: Unlimited, Rate: 10})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reactor.NewManual()
			s := tc.make(r)
			var ext engine.External
			a := engine.New(r)
			a.Sync(s, func(as *engine.Steps) { ext = as.External() }, nil)
			b := engine.New(r)
			b.Sync(s, func(as *engine.Steps) {}, nil)
			pa, pb := a.Promise(), b.Promise()
			r.RunUntilIdle()
			ext.Success()
			r.Advance(2 * time.Second)
			if _, err := pa.Wait(); err != nil {
				t.Fatalf("first flow: %v", err)
			}
			_, err := pb.Wait()
			if tc.rejected {
				if e, _ := err.(*engine.Error); e == nil || e.Code != engine.DefenseRejected {
					t.Fatalf("second flow: %v, want DefenseRejected", err)
				}
			} else if err != nil {
				t.Fatalf("second flow: %v, want it queued and let in", err)
			}
		})
	}
}
