package bench

import "testing"

// The real-reactor scenarios, ours and each peer side by side:
// BenchmarkRealSimple/impl=asyncsteps, BenchmarkRealSimple/impl=goroutines.

func BenchmarkCall(b *testing.B)           { runReactorScenario(b, "Call") }
func BenchmarkFanOut(b *testing.B)         { runReactorScenario(b, "FanOut") }
func BenchmarkFanOutBatch(b *testing.B)    { runReactorScenario(b, "FanOutBatch") }
func BenchmarkFanOutBatchRun(b *testing.B) { runReactorScenario(b, "FanOutBatchRun") }
func BenchmarkRealSimple(b *testing.B)     { runReactorScenario(b, "RealSimple") }
func BenchmarkRealParallel(b *testing.B)   { runReactorScenario(b, "RealParallel") }
func BenchmarkSubmit(b *testing.B)         { runReactorScenario(b, "Submit") }
func BenchmarkWakeup(b *testing.B)         { runReactorScenario(b, "Wakeup") }
func BenchmarkTimerLateness(b *testing.B)  { runReactorScenario(b, "TimerLateness") }
func BenchmarkTimerAddCancel(b *testing.B) { runReactorScenario(b, "TimerAddCancel") }

func runReactorScenario(b *testing.B, name string) {
	s, ok := LookupReactor(name)
	if !ok {
		b.Fatalf("no reactor scenario %q", name)
	}
	b.Run("impl="+ImplAsyncSteps, s.Ours)
	for _, p := range s.Peers {
		b.Run("impl="+p.Name, p.Bench)
	}
}

// TestReactorScenarioTable keeps the table and the Benchmark functions
// above in step.
func TestReactorScenarioTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range ReactorScenarios {
		if seen[s.Name] {
			t.Errorf("reactor scenario %s listed twice", s.Name)
		}
		seen[s.Name] = true
		if s.Ours == nil || len(s.Peers) == 0 || s.Unit == "" || s.What == "" {
			t.Errorf("reactor scenario %s lacks an implementation, a peer, a unit or a description", s.Name)
		}
	}
	for _, name := range []string{"Call", "FanOut", "FanOutBatch", "FanOutBatchRun", "RealSimple", "RealParallel", "Submit", "Wakeup", "TimerLateness", "TimerAddCancel"} {
		if !seen[name] {
			t.Errorf("BenchmarkX for %s has no scenario", name)
		}
	}
}
