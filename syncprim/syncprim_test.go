package syncprim

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// sectionGate is a section that waits until released, recording entries.
type sectionGate struct {
	log  []string
	exts map[string]engine.External
}

func newGate() *sectionGate { return &sectionGate{exts: map[string]engine.External{}} }

func (g *sectionGate) section(name string) engine.ExecFunc {
	return func(as *engine.Steps) {
		g.log = append(g.log, "enter "+name)
		g.exts[name] = as.External()
	}
}

func (g *sectionGate) open(t *testing.T, name string, args ...engine.Value) {
	t.Helper()
	if !g.exts[name].Success(args...) {
		t.Fatalf("%s: section not waiting", name)
	}
}

func start(r *reactor.Reactor, obj engine.Sync, f engine.ExecFunc, onerror ...engine.ErrorFunc) (*engine.Steps, *engine.Promise) {
	root := engine.New(r)
	var eh engine.ErrorFunc
	if len(onerror) > 0 {
		eh = onerror[0]
	}
	root.Sync(obj, f, eh)
	return root, root.Promise()
}

func done(p *engine.Promise) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

func wantLog(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("log %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("log %q, want %q", got, want)
		}
	}
}

func TestMutexFIFOAndHandOver(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(1, 0)
	g := newGate()
	var ps []*engine.Promise
	for _, n := range []string{"a", "b", "c"} {
		_, p := start(r, m, g.section(n))
		ps = append(ps, p)
	}
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a")
	if s := m.Stats(); s.Holders != 1 || s.Queued != 2 {
		t.Fatalf("stats %+v", s)
	}
	g.open(t, "a")
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a", "enter b")
	g.open(t, "b")
	r.RunUntilIdle()
	g.open(t, "c")
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a", "enter b", "enter c")
	for _, p := range ps {
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if s := m.Stats(); s != (Stats{}) {
		t.Fatalf("after all: %+v", s)
	}
}

func TestMutexMaxConcurrent(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(2, 0)
	g := newGate()
	for _, n := range []string{"a", "b", "c"} {
		start(r, m, g.section(n))
	}
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a", "enter b")
	g.open(t, "b")
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a", "enter b", "enter c")
}

func TestSyncValuesFlowThrough(t *testing.T) {
	objs := map[string]func(r *reactor.Reactor) engine.Sync{
		"mutex":    func(*reactor.Reactor) engine.Sync { return NewMutex(1, 0) },
		"throttle": func(r *reactor.Reactor) engine.Sync { return NewThrottle(r, 1, time.Second, 0) },
		"limiter":  func(r *reactor.Reactor) engine.Sync { return NewLimiter(r, LimiterOptions{}) },
	}
	for name, mk := range objs {
		t.Run(name, func(t *testing.T) {
			r := reactor.NewManual()
			obj := mk(r)
			var in int64
			root := engine.New(r)
			root.Add(func(as *engine.Steps) { as.Success(engine.Int(5)) })
			root.Sync(obj, func(as *engine.Steps) {
				in = as.Arg(0).Int()
				as.Success(engine.Int(in+1), engine.Str("x"))
			})
			root.Add(func(as *engine.Steps) { as.Success(as.Arg(0), as.Arg(1)) })
			p := root.Promise()
			r.RunUntilIdle()
			a, err := p.Wait()
			if err != nil || in != 5 || a.At(0).Int() != 6 || a.At(1).Str() != "x" {
				t.Fatalf("in=%d out=%v err=%v", in, a, err)
			}
		})
	}
}

func TestMutexValuesFlowThroughAWait(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(1, 0)
	g := newGate()
	start(r, m, g.section("a"))
	root := engine.New(r)
	var in int64
	root.Add(func(as *engine.Steps) { as.Success(engine.Int(7)) })
	root.Sync(m, func(as *engine.Steps) { in = as.Arg(0).Int() })
	p := root.Promise()
	r.RunUntilIdle()
	g.open(t, "a")
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil || in != 7 {
		t.Fatalf("in=%d err=%v", in, err)
	}
}

func TestMutexReentrant(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(1, 1)
	inner := false
	root := engine.New(r)
	root.Sync(m, func(as *engine.Steps) {
		as.Sync(m, func(as *engine.Steps) { inner = true }, nil)
	})
	p := root.Promise()
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil || !inner {
		t.Fatalf("inner=%v err=%v", inner, err)
	}
	if s := m.Stats(); s != (Stats{}) {
		t.Fatalf("stats %+v", s)
	}
}

// Parallel branches of one flow are separate flows: they inherit no lock
// and exclude each other.
func TestMutexParallelBranchesAreSeparateFlows(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(1, 0)
	g := newGate()
	root := engine.New(r)
	root.Sync(m, func(as *engine.Steps) {
		p := as.Parallel()
		p.Sync(m, g.section("b1"), nil)
		p.Sync(m, g.section("b2"), nil)
	})
	pr := root.Promise()
	r.RunUntilIdle()
	// The root holds m; branches queue behind it: a deadlock the spec
	// allows (detection is optional). Cancel ends it cleanly.
	wantLog(t, g.log)
	if s := m.Stats(); s.Holders != 1 || s.Queued != 2 {
		t.Fatalf("stats %+v", s)
	}
	root.Cancel()
	r.RunUntilIdle()
	if _, err := pr.Wait(); err == nil {
		t.Fatal("canceled flow succeeded")
	}
	if s := m.Stats(); s != (Stats{}) {
		t.Fatalf("after cancel: %+v", s)
	}
	// Two branches without an outer hold: one at a time.
	root2 := engine.New(r)
	par := root2.Parallel()
	par.Sync(m, g.section("x"), nil)
	par.Sync(m, g.section("y"), nil)
	root2.Promise()
	r.RunUntilIdle()
	wantLog(t, g.log, "enter x")
	g.open(t, "x")
	r.RunUntilIdle()
	wantLog(t, g.log, "enter x", "enter y")
}

func TestMutexErrorReleasesAndHandlerSeesIt(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(1, 0)
	var code string
	root := engine.New(r)
	root.Sync(m, func(as *engine.Steps) { as.Error("Boom") }, func(as *engine.Steps, c string) {
		code = c
		as.Success()
	})
	p := root.Promise()
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil || code != "Boom" {
		t.Fatalf("code=%q err=%v", code, err)
	}
	if s := m.Stats(); s != (Stats{}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestMutexCancelHolderAndWaiter(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(1, 0)
	g := newGate()
	holder, _ := start(r, m, g.section("a"))
	waiter, _ := start(r, m, g.section("b"))
	_, p3 := start(r, m, g.section("c"))
	r.RunUntilIdle()
	waiter.Cancel() // leaves the queue at once
	r.RunUntilIdle()
	if s := m.Stats(); s.Holders != 1 || s.Queued != 1 {
		t.Fatalf("after waiter cancel: %+v", s)
	}
	holder.Cancel() // gives its slot to c
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a", "enter c")
	g.open(t, "c")
	r.RunUntilIdle()
	if _, err := p3.Wait(); err != nil {
		t.Fatal(err)
	}
	if s := m.Stats(); s != (Stats{}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestMutexQueueLimit(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(1, 1)
	g := newGate()
	start(r, m, g.section("a"))
	start(r, m, g.section("b"))
	var code string
	_, p := start(r, m, g.section("c"), func(as *engine.Steps, c string) { code = c })
	r.RunUntilIdle()
	if _, err := p.Wait(); err == nil || code != engine.DefenseRejected {
		t.Fatalf("third flow: code=%q err=%v", code, err)
	}
}

func TestThrottlePeriods(t *testing.T) {
	r := reactor.NewManual()
	th := NewThrottle(r, 2, time.Second, 0)
	start0 := r.Now()
	var at []time.Duration
	var ps []*engine.Promise
	for i := 0; i < 5; i++ {
		_, p := start(r, th, func(as *engine.Steps) { at = append(at, r.Now().Sub(start0)) })
		ps = append(ps, p)
	}
	r.RunUntilIdle()
	if len(at) != 2 {
		t.Fatalf("entered at once: %d, want 2", len(at))
	}
	r.Advance(999 * time.Millisecond)
	if len(at) != 2 {
		t.Fatalf("entered before the period ended: %v", at)
	}
	r.Advance(time.Millisecond)
	if len(at) != 4 || at[2] != time.Second || at[3] != time.Second {
		t.Fatalf("second period: %v", at)
	}
	r.Advance(time.Second)
	if len(at) != 5 || at[4] != 2*time.Second {
		t.Fatalf("third period: %v", at)
	}
	for _, p := range ps {
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	r.Advance(time.Second) // an idle period: the timer stops
	if s := th.Stats(); s != (Stats{}) {
		t.Fatalf("after idle period: %+v", s)
	}
	// A new burst starts a new period at once.
	entered := false
	start(r, th, func(*engine.Steps) { entered = true })
	r.RunUntilIdle()
	if !entered {
		t.Fatal("entry after an idle period waited")
	}
}

func TestThrottleQueueLimitAndCancel(t *testing.T) {
	r := reactor.NewManual()
	th := NewThrottle(r, 1, time.Second, 1)
	ran := 0
	start(r, th, func(*engine.Steps) { ran++ })
	waiter, _ := start(r, th, func(*engine.Steps) { ran++ })
	var code string
	start(r, th, func(*engine.Steps) { ran++ }, func(as *engine.Steps, c string) { code = c })
	r.RunUntilIdle()
	if ran != 1 || code != engine.DefenseRejected {
		t.Fatalf("ran=%d code=%q", ran, code)
	}
	waiter.Cancel()
	r.RunUntilIdle()
	if s := th.Stats(); s.Queued != 0 {
		t.Fatalf("canceled waiter still queued: %+v", s)
	}
	r.Advance(time.Second)
	if ran != 1 {
		t.Fatalf("canceled waiter ran")
	}
}

func TestLimiterDefaultsRejectInsteadOfWaiting(t *testing.T) {
	r := reactor.NewManual()
	l := NewLimiter(r, LimiterOptions{})
	g := newGate()
	start(r, l, g.section("a"))
	var code string
	start(r, l, g.section("b"), func(as *engine.Steps, c string) { code = c })
	r.RunUntilIdle()
	if code != engine.DefenseRejected {
		t.Fatalf("second concurrent flow: %q", code)
	}
	g.open(t, "a")
	r.RunUntilIdle()
	// Concurrency is free again but the rate (1/s) is spent: Burst 0 rejects.
	code = ""
	start(r, l, g.section("c"), func(as *engine.Steps, c string) { code = c })
	r.RunUntilIdle()
	if code != engine.DefenseRejected {
		t.Fatalf("over the rate: %q", code)
	}
	r.Advance(time.Second)
	start(r, l, g.section("d"))
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a", "enter d")
}

func TestLimiterQueuesWithinLimits(t *testing.T) {
	r := reactor.NewManual()
	l := NewLimiter(r, LimiterOptions{Concurrent: 1, MaxQueue: 2, Rate: 2, Period: time.Second, Burst: 2})
	g := newGate()
	for _, n := range []string{"a", "b", "c"} {
		start(r, l, g.section(n))
	}
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a")
	g.open(t, "a")
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a", "enter b")
	g.open(t, "b")
	r.RunUntilIdle()
	wantLog(t, g.log, "enter a", "enter b") // rate 2/s spent: c waits for the period
	r.Advance(time.Second)
	wantLog(t, g.log, "enter a", "enter b", "enter c")
}

func TestUncontendedSyncAllocatesNothing(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(1, 0)
	th := NewThrottle(r, 1<<30, time.Hour, 0)
	empty := func(*engine.Steps) {}
	for name, obj := range map[string]engine.Sync{"mutex": m, "throttle": th} {
		step := func(as *engine.Steps) { as.Sync(obj, empty, nil) }
		run := func() {
			root := engine.New(r)
			root.Add(step)
			root.Execute()
			r.RunUntilIdle()
			root.Release()
		}
		for i := 0; i < 10; i++ {
			run()
		}
		if n := testing.AllocsPerRun(200, run); n != 0 {
			t.Fatalf("%s: %v allocs per uncontended Sync", name, n)
		}
	}
}

// Clones of a model root share its Sync step's spec, never its per-run state.
func TestRegressClonesOfASyncStepAreIndependent(t *testing.T) {
	r := reactor.NewManual()
	m := NewMutex(1, 0)
	model := engine.New(r)
	var exts []engine.External
	model.Sync(m, func(as *engine.Steps) { exts = append(exts, as.External()) })
	var ps []*engine.Promise
	for i := 0; i < 3; i++ {
		ps = append(ps, model.Clone().Promise())
	}
	r.RunUntilIdle()
	for n := 0; n < 3; n++ {
		if len(exts) != n+1 {
			t.Fatalf("after %d releases, %d sections entered", n, len(exts))
		}
		exts[n].Success()
		r.RunUntilIdle()
	}
	for i, p := range ps {
		if _, err := p.Wait(); err != nil {
			t.Fatalf("clone %d: %v", i, err)
		}
	}
	if s := m.Stats(); s != (Stats{}) {
		t.Fatalf("stats %+v", s)
	}
}
