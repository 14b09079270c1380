package syncprim

// A queued Mutex waiter resumes straight into its section (Lock.Wait):
// the Sync step itself becomes the section. What a section sees must not
// depend on whether it queued.

import (
	"fmt"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

func TestQueuedSectionSeesWhatAnEnteredOneSees(t *testing.T) {
	for _, mk := range []struct {
		name string
		m    func() *Mutex
	}{
		{"NewMutex", func() *Mutex { return NewMutex(1, 0) }},
		{"zero", func() *Mutex { return new(Mutex) }},
	} {
		t.Run(mk.name, func(t *testing.T) {
			r := reactor.NewManual()
			m := mk.m()
			g := newGate()
			start(r, m, g.section("a")) // holds m until opened
			var log []string
			root := engine.New(r)
			root.Add(func(as *engine.Steps) { as.Success(engine.Int(3)) })
			root.Sync(m, func(as *engine.Steps) {
				log = append(log, "in", boolStr(as.Holds(m)), fmt.Sprint(as.Arg(0).Int()))
				// Reentrant: passes through, not counted, not queued.
				as.Sync(m, func(as *engine.Steps) {
					log = append(log, "nested", boolStr(as.Holds(m)))
					as.Error("Boom")
				}, nil)
			}, func(as *engine.Steps, code string) {
				log = append(log, "handler "+code, boolStr(as.Holds(m)))
				if s := m.Stats(); s.Holders != 1 || s.Queued != 0 {
					t.Errorf("stats in the handler %+v, want 1 holder", s)
				}
				as.Success()
			})
			root.Add(func(as *engine.Steps) { log = append(log, "after", boolStr(as.Holds(m))) })
			p := root.Promise()
			r.RunUntilIdle()
			if s := m.Stats(); s.Holders != 1 || s.Queued != 1 {
				t.Fatalf("stats while queued %+v, want 1 holder, 1 queued", s)
			}
			g.open(t, "a")
			r.RunUntilIdle()
			if _, err := p.Wait(); err != nil {
				t.Fatalf("err %v", err)
			}
			wantLog(t, log, "in", "true", "3", "nested", "true", "handler Boom", "true", "after", "false")
			if s := m.Stats(); s != (Stats{}) {
				t.Fatalf("stats after %+v", s)
			}
		})
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestQueuedEntryAllocatesNothing: a flow that queues on a Mutex and is
// handed it allocates nothing once the pools are warm.
func TestQueuedEntryAllocatesNothing(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(1, 0)
	var ext engine.External
	var n int
	holderSection := func(as *engine.Steps) { ext = as.External() }
	section := func(as *engine.Steps) { n++ }
	holderStep := func(as *engine.Steps) { as.Sync(m, holderSection, nil) }
	waiterStep := func(as *engine.Steps) { as.Sync(m, section, nil) }
	holder, waiter := engine.New(r), engine.New(r)
	defer holder.Release()
	defer waiter.Release()
	run := func() {
		holder.Add(holderStep)
		holder.Execute()
		waiter.Add(waiterStep)
		waiter.Execute()
		r.RunUntilIdle()
		if s := m.Stats(); s.Queued != 1 {
			t.Fatalf("stats %+v, want one queued", s)
		}
		ext.Pass()
		r.RunUntilIdle()
	}
	run()
	if a := testing.AllocsPerRun(100, run); a != 0 {
		t.Errorf("%v allocations per queued entry, want 0", a)
	}
	if n != 102 || m.Stats() != (Stats{}) {
		t.Errorf("%d sections, stats %+v; want 102, none", n, m.Stats())
	}
}
