package syncprim

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Spec 2.1: sync runs its callbacks in the critical
// section: the error handler, and any steps it adds, run before the object
// is released, so a second flow enters only once the first has recovered.
func TestSyncErrorHandlerRunsInsideSection(t *testing.T) {
	objs := []struct {
		name string
		make func(r *reactor.Reactor) engine.Sync
	}{
		{"Mutex", func(r *reactor.Reactor) engine.Sync { return NewMutex(1, 0) }},
		{"Limiter", func(r *reactor.Reactor) engine.Sync {
			return NewLimiter(r, LimiterOptions{Concurrent: 1, MaxQueue: 4, Rate: 100, Period: time.Second, Burst: 4})
		}},
	}
	ways := []struct {
		name    string
		handler func(as *engine.Steps, log *[]string, ext *engine.External)
		want    []string
	}{
		{"handler adds a waiting step", func(as *engine.Steps, log *[]string, ext *engine.External) {
			*log = append(*log, "A handler")
			as.Add(func(as *engine.Steps) {
				*log = append(*log, "A recovery")
				*ext = as.External()
			})
		}, []string{"A section", "A handler", "A recovery", "A recovered", "B section"}},
		{"handler succeeds", func(as *engine.Steps, log *[]string, ext *engine.External) {
			*log = append(*log, "A handler")
			as.Success()
		}, []string{"A section", "A handler", "B section"}},
		{"handler returns silently", func(as *engine.Steps, log *[]string, ext *engine.External) {
			*log = append(*log, "A handler")
		}, []string{"A section", "A handler", "B section"}},
	}
	for _, o := range objs {
		for _, w := range ways {
			t.Run(o.name+"/"+w.name, func(t *testing.T) {
				r := reactor.NewManual()
				obj := o.make(r)
				var log []string
				var ext engine.External
				_, pa := start(r, obj, func(as *engine.Steps) {
					log = append(log, "A section")
					as.Error("Boom")
				}, func(as *engine.Steps, code string) { w.handler(as, &log, &ext) })
				_, pb := start(r, obj, func(as *engine.Steps) {
					log = append(log, "B section")
				})
				r.RunUntilIdle()
				if ext != (engine.External{}) {
					// B must still wait: A is recovering inside the section.
					if done(pb) {
						t.Fatalf("B ran while A recovered inside the section: %q", log)
					}
					log = append(log, "A recovered")
					ext.Success()
					r.RunUntilIdle()
				}
				<-pa.Done()
				<-pb.Done()
				wantLog(t, log, w.want...)
			})
		}
	}
}

// The error handler of a Sync step sees the section held: a nested Sync on
// the same Mutex from the handler's steps is reentrant, not a deadlock.
func TestSyncErrorHandlerHoldsMutex(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(1, 0)
	reentered := false
	_, p := start(r, m, func(as *engine.Steps) { as.Error("Boom") }, func(as *engine.Steps, code string) {
		as.Sync(m, func(as *engine.Steps) { reentered = true }, nil)
	})
	r.RunUntilIdle()
	if !done(p) || !reentered {
		t.Fatalf("handler's nested Sync did not reenter (done %v)", done(p))
	}
	if s := m.Stats(); s.Holders != 0 || s.Queued != 0 {
		t.Fatalf("mutex not released: %+v", s)
	}
}
