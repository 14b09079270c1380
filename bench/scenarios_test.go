package bench

import "testing"

// Each scenario runs both implementations side by side, ours under both
// drivers, named by parameter so benchstat can compare them:
// BenchmarkSimple/impl=asyncsteps/driver=loop,
// BenchmarkSimple/impl=asyncsteps/driver=goroutine,
// BenchmarkSimple/impl=goroutines.

func BenchmarkTurn(b *testing.B)             { runScenario(b, "Turn") }
func BenchmarkEmptyIteration(b *testing.B)   { runScenario(b, "EmptyIteration") }
func BenchmarkSimple(b *testing.B)           { runScenario(b, "Simple") }
func BenchmarkMutexSection(b *testing.B)     { runScenario(b, "MutexSection") }
func BenchmarkSequential(b *testing.B)       { runScenario(b, "Sequential") }
func BenchmarkParallel(b *testing.B)         { runScenario(b, "Parallel") }
func BenchmarkParallelWaitLoop(b *testing.B) { runScenario(b, "ParallelWaitLoop") }
func BenchmarkParallelOneStep(b *testing.B)  { runScenario(b, "ParallelOneStep") }
func BenchmarkParallelWaitLoopOneStep(b *testing.B) {
	runScenario(b, "ParallelWaitLoopOneStep")
}
func BenchmarkTimeout(b *testing.B)          { runScenario(b, "Timeout") }
func BenchmarkSimpleUnreleased(b *testing.B) { runScenario(b, "SimpleUnreleased") }
func BenchmarkSequentialStrInt(b *testing.B) { runScenario(b, "SequentialStrInt") }
func BenchmarkRepeatEmpty(b *testing.B)      { runScenario(b, "RepeatEmpty") }

func runScenario(b *testing.B, name string) {
	s, ok := Lookup(name)
	if !ok {
		b.Fatalf("no scenario %q", name)
	}
	b.Run("impl="+ImplAsyncSteps, func(b *testing.B) {
		b.Run("driver="+DriverLoop.String(), s.OursLoop)
		b.Run("driver="+DriverGoroutine.String(), s.Ours)
		if s.OursLoopCtx != nil {
			b.Run("driver="+DriverLoopCtx, s.OursLoopCtx)
		}
	})
	b.Run("impl="+ImplGoroutines, s.Peer)
}

// TestScenarioTable keeps the table and the Benchmark functions above in
// step: every scenario has both implementations and a target.
func TestScenarioTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Scenarios {
		if seen[s.Name] {
			t.Errorf("scenario %s listed twice", s.Name)
		}
		seen[s.Name] = true
		if s.OursLoop == nil || s.Ours == nil || s.Peer == nil {
			t.Errorf("scenario %s lacks an implementation", s.Name)
		}
		if s.Target() == "" {
			t.Errorf("scenario %s has no target", s.Name)
		}
	}
	for _, name := range []string{"Turn", "EmptyIteration", "Simple", "MutexSection", "Sequential", "Parallel", "ParallelWaitLoop", "ParallelOneStep", "ParallelWaitLoopOneStep", "Timeout", "SimpleUnreleased", "SequentialStrInt", "RepeatEmpty"} {
		if !seen[name] {
			t.Errorf("BenchmarkX for %s has no scenario", name)
		}
	}
}
