package reactor_test

import (
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// onManualLoop runs fn inside a callback of r's loop (driven by the test
// goroutine) and fails t if it did not run there.
func onManualLoop(t *testing.T, r *reactor.Reactor, fn func()) {
	t.Helper()
	ran := false
	r.Immediate(func() { ran = true; fn() })
	r.RunUntilIdle()
	if !ran {
		t.Fatal("the loop callback did not run")
	}
}

// Off the loop, Reactor.Loop says so: false and a Loop never held, on a manual
// reactor between drives, on a real one before Run and while it runs, and
// from a callback of another reactor's loop.
func TestLoopOffTheLoop(t *testing.T) {
	m := reactor.NewManual()
	l, ok := m.Loop()
	if ok || l.Reactor() != m {
		t.Errorf("manual reactor between drives: Loop() = %v, %v; want a Loop of m, false", l, ok)
	}
	// A Loop made off the loop is never held: its methods are the
	// Reactor's. Here Immediate takes the idle manual reactor (as
	// Reactor.Immediate does) and RunUntilIdle drives it from outside.
	ran := 0
	if h := l.Immediate(func() { ran++ }); !m.IsValid(h) {
		t.Error("off the loop: Loop.Immediate gave an invalid Handle")
	}
	l.RunUntilIdle()
	if ran != 1 {
		t.Errorf("off the loop: the callback ran %d times, want 1", ran)
	}
	real, err := reactor.New(reactor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := real.Loop(); ok {
		t.Error("real reactor before Run: Loop() ok")
	}
	runDone := make(chan error, 1)
	go func() { runDone <- real.Run() }()
	onLoop := make(chan bool, 1)
	real.Immediate(func() { _, ok := real.Loop(); onLoop <- ok })
	if !<-onLoop {
		t.Error("real reactor, in its loop's callback: Loop() not ok")
	}
	if _, ok := real.Loop(); ok {
		t.Error("real reactor while it runs, from another goroutine: Loop() ok")
	}
	onManualLoop(t, m, func() {
		if _, ok := real.Loop(); ok {
			t.Error("from a callback of another reactor's loop: Loop() ok")
		}
		l, ok := m.Loop()
		if !ok || l.Reactor() != m {
			t.Errorf("in the loop's callback: Loop() = %v, %v", l, ok)
		}
	})
	if err := real.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-runDone; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// Loop.Immediate joins the same local queue as Reactor.Immediate and
// PostTo on the loop: mixed, they run in the order posted, and a nested
// Loop.RunUntilIdle runs them before it returns.
func TestLoopImmediateOrder(t *testing.T) {
	type post int
	const (
		viaLoop post = iota
		viaReactor
		viaPostTo
	)
	cases := []struct {
		name  string
		posts []post
		drain bool // Loop.RunUntilIdle in the callback (else the outer drive runs them)
	}{
		{"loop only", []post{viaLoop, viaLoop, viaLoop}, false},
		{"alternating", []post{viaLoop, viaReactor, viaLoop, viaReactor, viaLoop}, false},
		{"reactor first", []post{viaReactor, viaReactor, viaLoop, viaPostTo, viaLoop}, false},
		{"alternating, drained nested", []post{viaLoop, viaReactor, viaPostTo, viaLoop, viaReactor}, true},
		{"past the first capacity (grow)", func() []post {
			ps := make([]post, 200)
			for i := range ps {
				ps[i] = post(i % 3)
			}
			return ps
		}(), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			var got []int
			cb := func(p *[]int, aux uint64) { *p = append(*p, int(aux)) }
			drained := false
			onManualLoop(t, r, func() {
				l, ok := r.Loop()
				if !ok {
					t.Fatal("Loop() off the loop in a callback")
				}
				for i, p := range c.posts {
					switch p {
					case viaLoop:
						l.Immediate(func() { got = append(got, i) })
					case viaReactor:
						r.Immediate(func() { got = append(got, i) })
					case viaPostTo:
						reactor.PostTo(r, cb, &got, uint64(i))
					}
				}
				if c.drain {
					l.RunUntilIdle()
					drained = len(got) == len(c.posts)
				}
			})
			if c.drain && !drained {
				t.Error("Loop.RunUntilIdle returned before the queued tasks ran")
			}
			if len(got) != len(c.posts) {
				t.Fatalf("ran %d of %d tasks", len(got), len(c.posts))
			}
			for i, v := range got {
				if v != i {
					t.Fatalf("order %v", got)
				}
			}
		})
	}
}

// A Loop.Immediate's Handle is Reactor.Immediate's: IsValid until it runs,
// Reactor.Cancel keeps it from running (on the loop, or from another
// goroutine between drives), and after Close Loop.Immediate returns the
// zero Handle without queueing.
func TestLoopHandles(t *testing.T) {
	cases := []struct {
		name     string
		cancelOn string // "", "loop", "goroutine"
		close    bool   // Close in the callback, before Loop.Immediate
		wantRun  bool
	}{
		{name: "runs", wantRun: true},
		{name: "canceled on the loop", cancelOn: "loop"},
		{name: "canceled off the loop", cancelOn: "goroutine"},
		{name: "after Close", close: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			ran := false
			var h reactor.Handle
			validOnLoop := false
			r.Immediate(func() {
				l, ok := r.Loop()
				if !ok {
					t.Error("Loop() off the loop in a callback")
					return
				}
				if c.close {
					if err := r.Close(); err != nil {
						t.Error(err)
					}
				}
				h = l.Immediate(func() { ran = true })
				validOnLoop = r.IsValid(h)
				if c.cancelOn == "loop" {
					r.Cancel(h)
					if r.IsValid(h) {
						t.Error("IsValid after Cancel on the loop")
					}
				}
			})
			r.Iterate() // runs the callback; its task waits for the next iteration's pass
			if validOnLoop != !c.close {
				t.Errorf("IsValid on the loop right after Loop.Immediate = %v", validOnLoop)
			}
			if h.IsZero() != c.close {
				t.Errorf("Handle zero = %v, want %v", h.IsZero(), c.close)
			}
			if c.cancelOn == "goroutine" {
				done := make(chan struct{})
				go func() { r.Cancel(h); close(done) }()
				<-done
			}
			r.RunUntilIdle()
			if ran != c.wantRun {
				t.Errorf("ran = %v, want %v", ran, c.wantRun)
			}
			if r.IsValid(h) {
				t.Error("IsValid after the task ran or was canceled")
			}
		})
	}
}

// Loop.RunUntilIdle runs what Reactor.RunUntilIdle runs: due timers,
// tasks posted from other goroutines, the local queue; a callback's panic
// goes to the panic handler and the tasks after it still run in the same
// drive; nested in a task run by a Loop.RunUntilIdle, it runs that
// drive's later tasks before it returns.
func TestLoopRunUntilIdleRunsEverything(t *testing.T) {
	r := reactor.NewManual()
	var panics []any
	r.SetPanicHandler(func(v any) { panics = append(panics, v) })
	var got []string
	onManualLoop(t, r, func() {
		l, _ := r.Loop()
		r.Deferred(0, func() { got = append(got, "timer") })
		posted := make(chan struct{})
		go func() {
			r.Immediate(func() { got = append(got, "posted") }) // the loop is held: through the ring
			close(posted)
		}()
		<-posted
		l.Immediate(func() { panic("boom") })
		l.Immediate(func() {
			got = append(got, "after the panic")
			l.Immediate(func() { got = append(got, "nested") })
			l.RunUntilIdle() // nested in the outer Loop.RunUntilIdle's pass
			got = append(got, "after the nested drive")
		})
		l.RunUntilIdle()
		got = append(got, "idle")
	})
	want := "after the panic,nested,posted,timer,after the nested drive,idle"
	if s := strings.Join(got, ","); s != want {
		t.Errorf("ran %s, want %s", s, want)
	}
	if len(panics) != 1 || panics[0] != "boom" {
		t.Errorf("panics %v, want [boom]", panics)
	}
}

// A Loop used where it is not valid takes the Reactor's checked path:
// kept past its drive and used by the goroutine that drives next, or by
// another goroutine, its Immediate is Reactor.Immediate (the task runs on
// the next drive, the Handle is valid until then) and its RunUntilIdle
// is Reactor.RunUntilIdle (it drives the manual reactor). A real
// reactor's case is TestLoopKeptPastItsIterationOnARealLoop.
func TestLoopUsedOffItsLoop(t *testing.T) {
	cases := []struct {
		name string
		use  func(use func()) // runs use somewhere off the Loop's loop
	}{
		{"after its drive, same goroutine", func(use func()) { use() }},
		{"after its drive, another goroutine", func(use func()) {
			done := make(chan struct{})
			go func() { defer close(done); use() }()
			<-done
		}},
		{"in another reactor's callback", func(use func()) {
			other := reactor.NewManual()
			other.Immediate(use)
			other.RunUntilIdle()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			var kept reactor.Loop
			onManualLoop(t, r, func() { kept, _ = r.Loop() })
			n, onItsLoop := 0, true
			var h reactor.Handle
			c.use(func() {
				h = kept.Immediate(func() { n++; onItsLoop = onItsLoop && r.IsSameThread() })
				if !r.IsValid(h) {
					t.Error("a stale Loop's Immediate: Handle not valid before the task ran")
				}
				kept.RunUntilIdle() // drives r
			})
			if n != 1 || r.IsValid(h) {
				t.Errorf("a stale Loop's task ran %d times (want 1), valid after %v", n, r.IsValid(h))
			}
			if !onItsLoop {
				t.Error("a stale Loop's task ran where r's loop word was not held (IsSameThread false): the drive did not take the loop")
			}
		})
	}
}

// On a real reactor's loop a Loop works as on a manual one: its tasks run
// in order with the Reactor's, and its RunUntilIdle runs them nested in the
// callback, as Reactor.RunUntilIdle does there; the loop keeps its word.
func TestLoopOnARealLoop(t *testing.T) {
	r, err := reactor.New(reactor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- r.Run() }()
	type result struct {
		order    []int
		nested   bool
		loopKept bool
	}
	res := make(chan result, 1)
	r.Immediate(func() {
		l, ok := r.Loop()
		if !ok {
			res <- result{}
			return
		}
		var order []int
		l.Immediate(func() { order = append(order, 0) })
		r.Immediate(func() { order = append(order, 1) })
		l.Immediate(func() { order = append(order, 2) })
		l.RunUntilIdle()
		res <- result{order, len(order) == 3, r.IsSameThread()}
	})
	got := <-res
	if !got.nested || !got.loopKept {
		t.Errorf("Loop.RunUntilIdle in a real loop's callback: ran nested %v, loop kept %v", got.nested, got.loopKept)
	}
	for i, v := range got.order {
		if v != i {
			t.Errorf("order %v", got.order)
			break
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-runDone; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// Reactor.Loop, Loop.Immediate and Loop.RunUntilIdle allocate nothing
// once the local queue has grown.
func TestLoopAllocs(t *testing.T) {
	r := reactor.NewManual()
	onManualLoop(t, r, func() {
		fn := func() {}
		l, _ := r.Loop()
		l.Immediate(fn)
		l.RunUntilIdle() // the queue's first buffer
		cases := []struct {
			name string
			f    func()
		}{
			{"Reactor.Loop", func() { _, _ = r.Loop() }},
			{"Immediate + RunUntilIdle", func() { l.Immediate(fn); l.RunUntilIdle() }},
			{"RunUntilIdle, idle", func() { l.RunUntilIdle() }},
		}
		for _, c := range cases {
			if n := testing.AllocsPerRun(1000, c.f); n != 0 {
				t.Errorf("%s: %v allocations", c.name, n)
			}
		}
	})
}
