package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
	"golang.org/x/time/rate"
)

// The sync scenarios, each implementation as a sub-benchmark named by
// parameter: BenchmarkMutexContended/impl=asyncsteps,
// BenchmarkMutexContended/impl=semaphore, ...

func BenchmarkMutexContended(b *testing.B)       { runSyncScenario(b, "MutexContended") }
func BenchmarkMutexContendedNoSpin(b *testing.B) { runSyncScenario(b, "MutexContendedNoSpin") }
func BenchmarkMutexContendedSpin(b *testing.B)   { runSyncScenario(b, "MutexContendedSpin") }
func BenchmarkThrottlePass(b *testing.B)         { runSyncScenario(b, "ThrottlePass") }
func BenchmarkThrottleWait(b *testing.B)         { runSyncScenario(b, "ThrottleWait") }

func runSyncScenario(b *testing.B, name string) {
	s, ok := LookupSync(name)
	if !ok {
		b.Fatalf("no sync scenario %q", name)
	}
	b.Run("impl="+ImplAsyncSteps, s.Ours)
	for _, p := range s.Peers {
		b.Run("impl="+p.Name, p.Bench)
	}
}

// TestSyncScenarioTable keeps the sync table and the Benchmark functions
// above in step.
func TestSyncScenarioTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range SyncScenarios {
		if seen[s.Name] {
			t.Errorf("sync scenario %s listed twice", s.Name)
		}
		if _, ok := Lookup(s.Name); ok {
			t.Errorf("sync scenario %s is also an engine scenario", s.Name)
		}
		seen[s.Name] = true
		if s.Ours == nil || len(s.Peers) == 0 {
			t.Errorf("sync scenario %s lacks an implementation", s.Name)
		}
		for _, p := range s.Peers {
			if p.Name == "" || p.Name == ImplAsyncSteps || p.Bench == nil {
				t.Errorf("sync scenario %s: bad peer %+v", s.Name, p)
			}
		}
		if s.Target() == "" {
			t.Errorf("sync scenario %s has no target", s.Name)
		}
	}
	for _, name := range []string{"MutexContended", "MutexContendedNoSpin", "MutexContendedSpin", "ThrottlePass", "ThrottleWait"} {
		if !seen[name] {
			t.Errorf("BenchmarkX for %s has no sync scenario", name)
		}
	}
}

// Each implementation of each sync scenario does the job: every round
// ends with exactly its entries, nobody inside a lock at once, and the
// throttled ones within their limit.

func TestSyncWork(t *testing.T) {
	w := &syncWork{exclusive: true}
	w.reset(3)
	for i := range 5 {
		w.enter(i % SyncWorkers)
	}
	if err := w.check("x"); err != nil {
		t.Fatal(err)
	}
	if w.more() {
		t.Fatal("more after the target")
	}
	if f := w.fairness(); f != 1 { // workers 0, 1, 2 entered once; the others not at all
		t.Fatalf("fairness %v, want 1 (the fewest counts as 1)", f)
	}
	w.reset(4)
	w.enter(0)
	if err := w.check("x"); err == nil {
		t.Fatal("a short round passed the check")
	}
	w.total.Store(100)
	if _, err := w.checkRate("x", 10, time.Second, 3*time.Second); err == nil {
		t.Fatal("100 entries in 3s passed a limit of 10/s")
	}
	if of, err := w.checkRate("x", 50, time.Second, 2*time.Second); err != nil || of != 1 {
		t.Fatalf("100 entries in 2s at 50/s: %v, %v", of, err)
	}
}

func TestSyncFlows(t *testing.T) {
	objs := map[string]func(owner *reactor.Reactor) engine.Sync{
		"mutex":         func(*reactor.Reactor) engine.Sync { return syncprim.NewMutex(1, 0) },
		"mutex/spin":    func(*reactor.Reactor) engine.Sync { return syncprim.NewMutex(1, 0) },
		"throttle/pass": func(r *reactor.Reactor) engine.Sync { return syncprim.NewThrottle(r, 1<<30, time.Hour, 0) },
		"throttle/wait": func(r *reactor.Reactor) engine.Sync { return syncprim.NewThrottle(r, WaitRate, WaitPeriod, 0) },
	}
	for name, mk := range objs {
		t.Run(name, func(t *testing.T) {
			w := &syncWork{exclusive: strings.HasPrefix(name, "mutex")}
			spin := time.Duration(0)
			if name == "mutex/spin" {
				spin = HandoverSpin
			}
			f, err := newSyncFlows(w, spin, mk)
			if err != nil {
				t.Skipf("no real reactor here: %v", err)
			}
			for _, n := range []int{1, 7, 1000, 3000} {
				t0 := time.Now()
				f.round(n)
				if err := w.check(name); err != nil {
					t.Fatal(err)
				}
				if name == "throttle/wait" {
					if _, err := w.checkRate(name, WaitRate, WaitPeriod, time.Since(t0)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := f.close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSyncPeers(t *testing.T) {
	peers := []struct {
		name      string
		exclusive bool
		step      func(w *syncWork, i int)
	}{
		{"semaphore", true, semaphoreStep()},
		{"syncMutex", true, syncMutexStep()},
		{"rate/pass", false, rateStep(rate.NewLimiter(rate.Limit(1e12), 1<<30))},
		{"rate/wait", false, rateStep(newWaitLimiter())},
	}
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			w := &syncWork{exclusive: p.exclusive}
			ws := startWorkers(w, func(i int) { p.step(w, i) })
			defer ws.stop()
			for _, n := range []int{1, 7, 1000, 3000} {
				ws.round(n)
				if err := w.check(p.name); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestSyncFlowsAllocateNothing: ours allocates nothing per round once
// warm, the contended path included (a waiter is per-call memory of its
// step, resumed through its External).
func TestSyncFlowsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	w := &syncWork{exclusive: true}
	f, err := newSyncFlows(w, 0, func(*reactor.Reactor) engine.Sync { return syncprim.NewMutex(1, 0) })
	if err != nil {
		t.Skipf("no real reactor here: %v", err)
	}
	defer f.close()
	f.round(syncWarm)
	if n := testing.AllocsPerRun(20, func() { f.round(2000) }); n != 0 {
		t.Fatalf("%v allocs per round of 2000 contended entries", n)
	}
}
