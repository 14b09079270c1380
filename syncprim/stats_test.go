package syncprim

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Stats report holders, waiters and the flows a full queue refused.
func TestStatsCountRejected(t *testing.T) {
	r := reactor.NewManual()
	tests := []struct {
		name string
		obj  engine.Sync
		st   func() Stats
	}{
		{"mutex", NewMutex(1, 1), nil},
		{"throttle", NewThrottle(r, 1, time.Second, 1), nil},
	}
	tests[0].st = tests[0].obj.(*Mutex).Stats
	tests[1].st = tests[1].obj.(*Throttle).Stats
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var codes []string
			var exts []engine.External
			for i := 0; i < 4; i++ {
				root := engine.New(r)
				root.Add(func(as *engine.Steps) {
					as.Sync(tt.obj, func(as *engine.Steps) { exts = append(exts, as.External()) })
				}, func(as *engine.Steps, code string) { codes = append(codes, code) })
				root.Execute()
			}
			r.RunUntilIdle()
			// One inside, one queued, two refused.
			if s := tt.st(); s != (Stats{Holders: 1, Queued: 1, Rejected: 2}) {
				t.Fatalf("stats %+v, want 1 holder, 1 queued, 2 rejected", s)
			}
			if len(codes) != 2 || codes[0] != engine.DefenseRejected {
				t.Fatalf("error codes %v, want two DefenseRejected", codes)
			}
			for len(exts) > 0 {
				e := exts[0]
				exts = exts[1:]
				e.Success()
				r.Advance(time.Second)
			}
			r.Advance(2 * time.Second)
			if s := tt.st(); s.Queued != 0 || s.Rejected != 2 {
				t.Fatalf("after the flows ended: %+v", s)
			}
		})
	}
}
