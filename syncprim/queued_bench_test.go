package syncprim

import (
	"testing"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// passExternal ends the waiting step whose External arg points to.
func passExternal(arg unsafe.Pointer, _ uint64) { (*engine.External)(arg).Pass() }

// BenchmarkQueuedOneLoop: contendedFlows flows on one manual reactor loop
// through one Mutex whose section waits for a post back to the loop, so
// the flows of a Mutex(1) queue behind it, as flows on different reactors
// do in BenchmarkContended, but on one thread and without wake-ups:
// deterministic enough for callgrind. impl=slots is the same with as many
// slots as flows (nobody queues); the difference between the two
// (ns-over-slots/op) is the queued path: queue, wait step, hand-over,
// unqueue. A section whose step ends at once never queues on one loop (a
// flow enters and leaves before the next one runs), which is why the
// section waits. b.N counts entries.
func BenchmarkQueuedOneLoop(b *testing.B) {
	var slotsNs float64
	for _, impl := range []struct {
		name  string
		slots int
	}{{"slots", contendedFlows}, {"queued", 1}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			r := reactor.NewManual()
			m := NewMutex(impl.slots, 0)
			var total, target int
			ext := make([]engine.External, contendedFlows)
			starts := make([]engine.ExecFunc, contendedFlows)
			for i := range starts {
				section := func(as *engine.Steps) {
					total++
					ext[i] = as.External()
					reactor.X.Post(r, passExternal, unsafe.Pointer(&ext[i]), 0)
				}
				body := func(as *engine.Steps) {
					if total >= target {
						as.Break()
					}
					as.Sync(m, section, nil)
				}
				// The loop is added on the loop, by the flow's first step:
				// built off the loop, a Loop's state would be a heap
				// allocation per run.
				starts[i] = func(as *engine.Steps) { as.Loop(body) }
			}
			roots := make([]*engine.Steps, contendedFlows)
			for i := range roots {
				roots[i] = engine.New(r)
				defer roots[i].Release()
			}
			round := func(n int) {
				total, target = 0, n
				for i, root := range roots {
					root.Add(starts[i])
					root.Execute()
				}
				r.RunUntilIdle()
				// Each flow may enter once more after the target is met
				// (it checked before the others' last entries).
				if total < n || total > n+contendedFlows {
					b.Fatalf("%d entries, want %d", total, n)
				}
			}
			round(10000) // the pools warm, as the measured rounds will use them
			const perRound = 4096
			entries := 0
			b.ReportAllocs()
			b.ResetTimer()
			for left := b.N; left > 0; left -= perRound {
				round(min(left, perRound))
				entries += total
			}
			b.StopTimer()
			if s := m.Stats(); s != (Stats{}) {
				b.Fatalf("stats after the run: %+v", s)
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(entries)
			b.ReportMetric(ns, "ns/entry")
			if impl.slots > 1 {
				slotsNs = ns
			} else if slotsNs > 0 {
				b.ReportMetric(ns-slotsNs, "ns-over-slots/entry")
			}
		})
	}
}
