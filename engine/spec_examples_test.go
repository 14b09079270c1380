package engine

import (
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// runRoot executes root on a manual reactor until idle and returns the log.
func runRoot(t *testing.T, r *reactor.Reactor, root *Steps) {
	t.Helper()
	root.Execute()
	r.RunUntilIdle()
}

func checkLog(t *testing.T, got []string, want string) {
	t.Helper()
	w := strings.Split(strings.TrimSpace(want), "\n")
	for i := range w {
		w[i] = strings.TrimSpace(w[i])
	}
	if strings.Join(got, "\n") != strings.Join(w, "\n") {
		t.Fatalf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(w, "\n"))
	}
}

// Spec 1.1: levels and their execution order.
func TestSpecLevels(t *testing.T) {
	r := reactor.NewManual()
	var log []string
	p := func(s string) ExecFunc { return func(as *Steps) { log = append(log, s) } }
	root := New(r)
	root.Add(func(as *Steps) {
		log = append(log, "Level 0 add #1")
		as.Add(func(as *Steps) {
			log = append(log, "Level 1 add #1")
			as.Add(p("Level 2 add #1"))
			as.Parallel().Add(p("Level 2 parallel #2"))
			as.Add(p("Level 2 add #3"))
		})
		as.Parallel().Add(p("Level 1 parallel #2"))
		as.Add(p("Level 1 add #3"))
	})
	root.Parallel().Add(p("Level 0 parallel #2"))
	root.Add(p("Level 0 add #3"))
	runRoot(t, r, root)
	checkLog(t, log, `
		Level 0 add #1
		Level 1 add #1
		Level 2 add #1
		Level 2 parallel #2
		Level 2 add #3
		Level 1 parallel #2
		Level 1 add #3
		Level 0 parallel #2
		Level 0 add #3`)
}

// Spec 1.2: error handling.
func TestSpecErrorHandling(t *testing.T) {
	r := reactor.NewManual()
	var log []string
	root := New(r)
	root.Add(func(as *Steps) {
		log = append(log, "Level 0 func")
		as.Add(func(as *Steps) {
			log = append(log, "Level 1 func")
			as.Error("myerror")
		}, func(as *Steps, err string) {
			log = append(log, "Level 1 onerror: "+err)
			as.Error("newerror")
		})
	}, func(as *Steps, err string) {
		log = append(log, "Level 0 onerror: "+err)
		as.Success(Str("Prm"))
	})
	root.Add(func(as *Steps) {
		log = append(log, "Level 0 func2: "+as.Arg(0).Str())
		as.Success()
	})
	p := root.Promise()
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil {
		t.Fatalf("flow failed: %v", err)
	}
	checkLog(t, log, `
		Level 0 func
		Level 1 func
		Level 1 onerror: myerror
		Level 0 onerror: newerror
		Level 0 func2: Prm`)
}

// Spec 1.2.1: steps added in an error handler.
func TestSpecStepsInErrorHandler(t *testing.T) {
	r := reactor.NewManual()
	var log []string
	root := New(r)
	root.Add(func(as *Steps) {
		log = append(log, "Level 0 func")
		as.Add(func(as *Steps) {
			log = append(log, "Level 1 func")
			as.Error("first")
		}, func(as *Steps, err string) {
			log = append(log, "Level 1 onerror: "+err)
			as.Add(func(as *Steps) {
				log = append(log, "Level 2 func")
				as.Error("second")
			}, func(as *Steps, err string) {
				log = append(log, "Level 2 onerror: "+err)
			})
		})
	}, func(as *Steps, err string) {
		log = append(log, "Level 0 onerror: "+err)
	})
	p := root.Promise()
	r.RunUntilIdle()
	_, err := p.Wait()
	if e, ok := err.(*Error); !ok || e.Code != "second" {
		t.Fatalf("Wait() error = %v, want code second", err)
	}
	checkLog(t, log, `
		Level 0 func
		Level 1 func
		Level 1 onerror: first
		Level 2 func
		Level 2 onerror: second
		Level 0 onerror: second`)
}
