//go:build linux

package engine_test

// The engine on real (threaded) reactors: flows built, executed, completed
// and canceled from other goroutines, timeouts on the real clock, parallel
// steps, loops, many flows on a Group, and what Close does to running flows.
// The semantics are the ones the manual-reactor tests check; only the
// driving differs. No test depends on speed except "never early" for
// timeouts and a hang guard that only a deadlock reaches.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// realWait waits for p with a hang guard and returns its result.
func realWait(t *testing.T, p *engine.Promise, what string) (*engine.Args, error) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(reactortest.Hang):
		t.Fatalf("%s: flow did not end (deadlock or lost wake-up?)", what)
	}
	return p.Wait()
}

func errInfo(err error) string {
	var fe *engine.Error
	if errors.As(err, &fe) {
		return fe.Info
	}
	return ""
}

// onRealLoop runs fn on r's loop and waits for it.
func onRealLoop(t *testing.T, r *reactor.Reactor, fn func()) {
	t.Helper()
	done := make(chan struct{})
	r.Immediate(func() { defer close(done); fn() })
	select {
	case <-done:
	case <-time.After(reactortest.Hang):
		t.Fatal("callback did not run")
	}
}

// -------------------------------------------------- built and run elsewhere

// Roots created, built, executed and awaited on many goroutines at once,
// none of them the loop; values flow from step to step.
func TestRealFlowsFromOtherGoroutines(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	const goroutines, per = 8, 200
	var wg sync.WaitGroup
	errs := make(chan string, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				root := engine.New(r)
				var onLoop atomic.Bool
				root.Add(func(as *engine.Steps) {
					onLoop.Store(r.IsSameThread())
					as.Success(engine.Int(int64(g)), engine.Str("x"))
				})
				root.Add(func(as *engine.Steps) {
					v := as.Arg(0).Int() // sub-steps start with no values: pass it by closure
					as.Add(func(as *engine.Steps) { as.Success(engine.Int(v*1000 + int64(i))) })
				})
				root.Add(func(as *engine.Steps) { as.Success(engine.Int(as.Arg(0).Int() + 1)) })
				p := root.Promise()
				select {
				case <-p.Done():
				case <-time.After(reactortest.Hang):
					errs <- "flow did not end"
					return
				}
				args, err := p.Wait()
				want := int64(g)*1000 + int64(i) + 1
				if err != nil || args.Len() != 1 || args.At(0).Int() != want {
					errs <- fmt.Sprintf("goroutine %d flow %d: %v %v, want %d", g, i, args, err, want)
					return
				}
				if !onLoop.Load() {
					errs <- "step callback not on the loop"
					return
				}
				// Reuse the root once, then give it back.
				root.Add(func(as *engine.Steps) { as.Success(engine.Str("again")) })
				args, err = root.Promise().Wait()
				if err != nil || args.At(0).Str() != "again" {
					errs <- fmt.Sprintf("reused root: %v %v", args, err)
					return
				}
				root.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	var st engine.Stats
	onRealLoop(t, r, func() { st = engine.StatsOf(r) })
	if st.FramesLive != 0 || st.FlowsLive != 0 || st.RootsLive != 0 {
		t.Fatalf("after every flow ended and was released: %+v", st)
	}
}

// Roots executed from one goroutine start in the order of their Execute
// calls.
func TestRealExecuteOrderFromOneGoroutine(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	const n = 2000
	var order []int // loop-owned
	ps := make([]*engine.Promise, n)
	for i := 0; i < n; i++ {
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { order = append(order, i) })
		ps[i] = root.Promise()
	}
	for i, p := range ps {
		if _, err := realWait(t, p, fmt.Sprint("flow ", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("root %d started at position %d", v, i)
		}
	}
	if len(order) != n {
		t.Fatalf("%d roots started, want %d", len(order), n)
	}
}

// ------------------------------------------------------------------ External

func TestRealExternalFromOtherGoroutines(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	const n = 500
	type res struct {
		p       *engine.Promise
		handler string // loop-owned until p is done
		gotOK   bool
		second  atomic.Int32 // completions that reported true
	}
	rs := make([]*res, n)
	var finishers sync.WaitGroup
	for i := range rs {
		x := &res{}
		rs[i] = x
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			ext := as.External()
			// Two goroutines race to finish the same step: exactly one wins.
			for k := 0; k < 2; k++ {
				finishers.Add(1)
				go func() {
					defer finishers.Done()
					time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
					var ok bool
					if i%3 == 0 {
						ok = ext.Error("CommError", fmt.Sprint("failed ", i))
					} else {
						ok = ext.Success(engine.Int(int64(i)), engine.Str("ext"))
					}
					if ok {
						x.second.Add(1)
					}
				}()
			}
		}, func(as *engine.Steps, code string) {
			x.handler = code + ": " + as.State().ErrorInfo
		})
		root.Add(func(as *engine.Steps) {
			x.gotOK = as.Arg(0).Int() == int64(i) && as.Arg(1).Str() == "ext"
			as.Success(as.Arg(0))
		})
		x.p = root.Promise()
	}
	for i, x := range rs {
		args, err := realWait(t, x.p, fmt.Sprint("flow ", i))
		if i%3 == 0 {
			wantCode(t, err, "CommError")
			if want := "CommError: failed " + fmt.Sprint(i); x.handler != want {
				t.Fatalf("flow %d: handler saw %q, want %q", i, x.handler, want)
			}
			continue
		}
		wantNoErr(t, err)
		if !x.gotOK || args.At(0).Int() != int64(i) {
			t.Fatalf("flow %d: next step did not get the External's values (%v)", i, args.At(0))
		}
	}
	finishers.Wait() // the losers too
	for i, x := range rs {
		if c := x.second.Load(); c != 1 {
			t.Fatalf("flow %d: %d External completions reported true, want exactly 1", i, c)
		}
	}
}

// ------------------------------------------------------------------- Cancel

func TestRealCancelFromOtherGoroutines(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	const n = 300
	type res struct {
		p        *engine.Promise
		root     *engine.Steps
		log      []string // loop-owned until p is done
		started  chan struct{}
		external engine.External
	}
	rs := make([]*res, n)
	for i := range rs {
		x := &res{started: make(chan struct{})}
		rs[i] = x
		root := engine.New(r)
		x.root = root
		root.Add(func(as *engine.Steps) { // A
			as.SetCancel(func(*engine.Steps) { x.log = append(x.log, "cancel A") })
			as.Add(func(as *engine.Steps) { // B
				as.SetCancel(func(*engine.Steps) { x.log = append(x.log, "cancel B") })
				x.external = as.External()
				close(x.started)
			}, func(as *engine.Steps, code string) { x.log = append(x.log, "handler B "+code) })
		}, func(as *engine.Steps, code string) { x.log = append(x.log, "handler A "+code) })
		root.Add(func(as *engine.Steps) { x.log = append(x.log, "never") })
		x.p = root.Promise()
	}
	var wg sync.WaitGroup
	for _, x := range rs {
		select {
		case <-x.started:
		case <-time.After(reactortest.Hang):
			t.Fatal("flow did not start")
		}
		wg.Add(1)
		go func() { defer wg.Done(); x.root.Cancel(); x.root.Cancel() }()
	}
	wg.Wait()
	for i, x := range rs {
		_, err := realWait(t, x.p, fmt.Sprint("flow ", i))
		wantCode(t, err, engine.Canceled)
		if !slices.Equal(x.log, []string{"cancel B", "cancel A"}) {
			t.Fatalf("flow %d: %q, want cancel handlers once, innermost first, no error handler", i, x.log)
		}
		if x.external.Success() {
			t.Fatalf("flow %d: External of a canceled step reported true", i)
		}
	}
}

// Cancel and External.Success race from two goroutines: the flow ends one
// way or the other, and the cancel handler runs exactly when it was canceled.
func TestRealCancelRacesExternal(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	const n = 500
	canceled, succeeded := 0, 0
	for i := 0; i < n; i++ {
		var handlerRuns atomic.Int32
		extCh := make(chan engine.External, 1)
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.SetCancel(func(*engine.Steps) { handlerRuns.Add(1) })
			extCh <- as.External()
		})
		p := root.Promise()
		ext := <-extCh
		var wg sync.WaitGroup
		var accepted atomic.Bool
		wg.Add(2)
		go func() { defer wg.Done(); accepted.Store(ext.Success(engine.Int(1))) }()
		go func() { defer wg.Done(); root.Cancel() }()
		wg.Wait()
		args, err := realWait(t, p, "race")
		// The cancel handler runs when the cancel reaches the step while it
		// waits (then External reports false, or true if it lost the race
		// on the loop); if the result was applied first, the step is done
		// and the flow may still be canceled between steps, without it.
		if h := handlerRuns.Load(); h > 1 {
			t.Fatalf("flow %d: cancel handler ran %d times", i, h)
		}
		switch codeOf(err) {
		case "":
			succeeded++
			if args.At(0).Int() != 1 || handlerRuns.Load() != 0 || !accepted.Load() {
				t.Fatalf("flow %d succeeded with %v, cancel handler ran %d times, External reported %v",
					i, args.At(0), handlerRuns.Load(), accepted.Load())
			}
		case engine.Canceled:
			canceled++
			if !accepted.Load() && handlerRuns.Load() != 1 {
				t.Fatalf("flow %d canceled while its step waited (External refused), cancel handler ran %d times", i, handlerRuns.Load())
			}
		default:
			t.Fatalf("flow %d ended with %v", i, err)
		}
		root.Release()
	}
	t.Logf("%d succeeded, %d canceled", succeeded, canceled)
}

// ------------------------------------------------------------------ timeouts

// SetTimeout on the real clock: the step's error handler gets Timeout, never
// before the delay; descendants' cancel handlers run innermost first and
// their error handlers are not called; a step that finishes in time does
// not time out.
func TestRealSetTimeoutNeverEarly(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	const n = 200
	rng := rand.New(rand.NewPCG(5, 6))
	type res struct {
		d       time.Duration
		p       *engine.Promise
		start   time.Time // set on the loop before SetTimeout
		waited  time.Duration
		log     []string
		inTime  bool
		extLate engine.External
	}
	rs := make([]*res, n)
	for i := range rs {
		x := &res{d: time.Duration(rng.IntN(20_001)) * time.Microsecond, inTime: i%4 == 0}
		rs[i] = x
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { // A: the step with the timeout
			x.start = time.Now()
			if x.inTime {
				as.SetTimeout(time.Hour)
				ext := as.External()
				go func() { ext.Success(engine.Str("in time")) }()
				return
			}
			as.SetTimeout(x.d)
			as.Add(func(as *engine.Steps) { // B
				as.SetCancel(func(*engine.Steps) { x.log = append(x.log, "cancel B") })
				as.Add(func(as *engine.Steps) { // C
					as.SetCancel(func(*engine.Steps) { x.log = append(x.log, "cancel C") })
					x.extLate = as.External()
				}, func(as *engine.Steps, code string) { x.log = append(x.log, "handler C "+code) })
			}, func(as *engine.Steps, code string) { x.log = append(x.log, "handler B "+code) })
		}, func(as *engine.Steps, code string) {
			x.waited = time.Since(x.start)
			x.log = append(x.log, "handler A "+code)
			as.Success(engine.Str("recovered"))
		})
		x.p = root.Promise()
	}
	var maxLate time.Duration
	for i, x := range rs {
		args, err := realWait(t, x.p, fmt.Sprint("flow ", i))
		wantNoErr(t, err)
		if x.inTime {
			if args.At(0).Str() != "in time" || len(x.log) != 0 {
				t.Fatalf("flow %d finished in time but got %q, log %q", i, args.At(0).Str(), x.log)
			}
			continue
		}
		if !slices.Equal(x.log, []string{"cancel C", "cancel B", "handler A Timeout"}) || args.At(0).Str() != "recovered" {
			t.Fatalf("flow %d: log %q result %q", i, x.log, args.At(0).Str())
		}
		if x.waited < x.d {
			t.Fatalf("flow %d: timed out after %v, timeout %v: early", i, x.waited, x.d)
		}
		maxLate = max(maxLate, x.waited-x.d)
		if x.extLate.Success() {
			t.Fatalf("flow %d: External of a timed-out step reported true", i)
		}
	}
	t.Logf("max timeout lateness %v", maxLate)
}

// ---------------------------------------------------------- parallel, loops

func TestRealParallel(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	t.Run("allBranchesFromGoroutines", func(t *testing.T) {
		const branches = 16
		var log []string // loop-owned
		var done atomic.Int32
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			p := as.Parallel()
			for b := 0; b < branches; b++ {
				p.Add(func(as *engine.Steps) {
					log = append(log, fmt.Sprint("start ", b))
					as.Add(func(as *engine.Steps) {
						ext := as.External()
						go func() {
							time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
							ext.Success(engine.Int(int64(b)))
						}()
					})
					as.Add(func(as *engine.Steps) {
						if as.Arg(0).Int() == int64(b) {
							done.Add(1)
						}
					})
				})
			}
			as.Add(func(as *engine.Steps) {
				log = append(log, fmt.Sprintf("after parallel %d args=%d", done.Load(), as.Args().Len()))
			})
		})
		_, err := realWait(t, root.Promise(), "parallel")
		wantNoErr(t, err)
		if len(log) != branches+1 || log[branches] != fmt.Sprintf("after parallel %d args=0", branches) {
			t.Fatalf("log %q", log)
		}
		for b := 0; b < branches; b++ {
			if log[b] != fmt.Sprint("start ", b) {
				t.Fatalf("branches did not start in order: %q", log)
			}
		}
	})
	t.Run("failingBranchCancelsSiblings", func(t *testing.T) {
		var log []string // loop-owned
		exts := make(chan engine.External, 2)
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.Parallel(func(as *engine.Steps, code string) {
				log = append(log, "parallel handler "+code+" "+as.State().ErrorInfo)
			}).
				Add(func(as *engine.Steps) {
					as.SetCancel(func(*engine.Steps) { log = append(log, "cancel b1") })
					exts <- as.External()
				}, func(as *engine.Steps, code string) { log = append(log, "b1 handler") }).
				Add(func(as *engine.Steps) {
					as.Add(func(as *engine.Steps) {
						ext := as.External()
						go func() { time.Sleep(time.Millisecond); ext.Error("Bad", "branch 2 failed") }()
					})
				})
		})
		_, err := realWait(t, root.Promise(), "parallel")
		wantCode(t, err, "Bad")
		if !slices.Equal(log, []string{"cancel b1", "parallel handler Bad branch 2 failed"}) {
			t.Fatalf("log %q", log)
		}
		if (<-exts).Success() {
			t.Fatal("External of a canceled sibling reported true")
		}
	})
}

func TestRealLoops(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	var log []string // loop-owned
	var sum int
	root := engine.New(r)
	root.Repeat(1000, func(as *engine.Steps, i int) {
		if i%100 == 7 {
			ext := as.External()
			go func() { ext.Success(engine.Int(int64(i))) }()
			return
		}
		sum += i
	})
	root.Add(func(as *engine.Steps) {
		log = append(log, fmt.Sprint("repeat sum ", sum))
		as.Loop(func(as *engine.Steps) {
			n := len(log)
			as.Add(func(as *engine.Steps) {
				ext := as.External()
				go func() { ext.Success() }()
			})
			as.Add(func(as *engine.Steps) {
				log = append(log, fmt.Sprint("iter ", n))
				if n == 3 {
					as.Continue("outer")
				}
				if n == 5 {
					as.Break("outer")
				}
			}, func(as *engine.Steps, code string) { log = append(log, "never: "+code) })
		}, "outer")
	})
	root.Add(func(as *engine.Steps) {
		engine.ForEach(as, []string{"a", "b", "c"}, func(as *engine.Steps, i int, v string) {
			as.Add(func(as *engine.Steps) {
				ext := as.External()
				go func() { ext.Success(engine.Str(v)) }()
			})
			as.Add(func(as *engine.Steps) { log = append(log, fmt.Sprint(i, as.Arg(0).Str())) })
		})
	})
	root.Add(func(as *engine.Steps) {
		as.Loop(func(as *engine.Steps) {
			as.Add(func(as *engine.Steps) {
				ext := as.External()
				go func() { ext.Error("Bad", "in body") }()
			})
		})
	}, func(as *engine.Steps, code string) {
		log = append(log, "loop error "+code)
		as.Success(engine.Str("end"))
	})
	args, err := realWait(t, root.Promise(), "loops")
	wantNoErr(t, err)
	var want int
	for i := 0; i < 1000; i++ {
		if i%100 != 7 {
			want += i
		}
	}
	wantLog := []string{fmt.Sprint("repeat sum ", want), "iter 1", "iter 2", "iter 3", "iter 4", "iter 5", "0a", "1b", "2c", "loop error Bad"}
	if !slices.Equal(log, wantLog) || args.At(0).Str() != "end" {
		t.Fatalf("log %q result %q\nwant %q", log, args.At(0).Str(), wantLog)
	}
}

// The same flow, run on a manual reactor and on a real one, leaves the same
// trace: the real reactor changes the driving, not the semantics.
func TestRealSameTraceAsManual(t *testing.T) {
	build := func(r *reactor.Reactor, log *[]string, complete func(func())) *engine.Steps {
		add := func(s string) { *log = append(*log, s) }
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.Add(func(as *engine.Steps) {
				ext := as.External()
				complete(func() { ext.Success(engine.Int(41)) })
			})
			as.Add(func(as *engine.Steps) {
				add(fmt.Sprint("got ", as.Arg(0).Int()))
				as.Error("Bad", "c failed")
			})
		}, func(as *engine.Steps, code string) {
			add("handler " + code + " " + as.State().ErrorInfo)
			as.Success(engine.Str("rec"))
		})
		root.Add(func(as *engine.Steps) {
			add("after " + as.Arg(0).Str())
			as.Repeat(3, func(as *engine.Steps, i int) {
				add(fmt.Sprint("rep ", i))
				if i == 1 {
					as.Continue()
				}
				as.Add(func(as *engine.Steps) {
					ext := as.External()
					complete(func() { ext.Success() })
				})
			})
		})
		root.Add(func(as *engine.Steps) {
			p := as.Parallel()
			for _, b := range []string{"p1", "p2"} {
				p.Add(func(as *engine.Steps) {
					add("start " + b)
					ext := as.External()
					complete(func() { ext.Success() })
				})
			}
			as.Add(func(as *engine.Steps) { add("after parallel") })
		})
		root.Add(func(as *engine.Steps) {
			as.SetTimeout(5 * time.Millisecond)
			as.SetCancel(func(*engine.Steps) { add("cancel t") })
		}, func(as *engine.Steps, code string) {
			add("timeout handler " + code)
			as.Success(engine.Int(7))
		})
		root.Add(func(as *engine.Steps) {
			engine.ForEachMap(as, map[string]int{"b": 2, "a": 1}, func(as *engine.Steps, k string, v int) {
				add(fmt.Sprint(k, v))
			})
		})
		root.Add(func(as *engine.Steps) { as.Success(engine.Str("done"), engine.Int(3)) })
		return root
	}

	// Manual: completions are timers, driven by Advance.
	var manualLog []string
	m := reactor.NewManual()
	mp := build(m, &manualLog, func(f func()) { m.Deferred(time.Millisecond, f) }).Promise()
	for i := 0; i < 100 && !isDone(mp); i++ {
		m.Advance(time.Millisecond)
	}
	margs, merr := waitDone(t, mp)

	// Real: completions come from other goroutines.
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	var realLog []string
	rargs, rerr := realWait(t, build(r, &realLog, func(f func()) { go f() }).Promise(), "flow")

	if codeOf(merr) != codeOf(rerr) || margs.Len() != rargs.Len() ||
		margs.At(0).Str() != rargs.At(0).Str() || margs.At(1).Int() != rargs.At(1).Int() {
		t.Fatalf("manual result %v %v, real %v %v", margs, merr, rargs, rerr)
	}
	if !slices.Equal(manualLog, realLog) {
		t.Fatalf("traces differ\nmanual: %s\n  real: %s", strings.Join(manualLog, " | "), strings.Join(realLog, " | "))
	}
	if len(manualLog) < 10 {
		t.Fatalf("trace too short: %q", manualLog)
	}
}

// --------------------------------------------------- many flows on a Group

func TestRealManyFlowsOnGroup(t *testing.T) {
	g0 := goroutinesButReclaim()
	g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	closed := false
	defer func() {
		if !closed {
			_ = g.Close()
		}
	}()
	const goroutines, per = 8, 1250 // 10k flows
	var wg sync.WaitGroup
	errs := make(chan string, goroutines)
	var perReactor [2]atomic.Int32
	rs := g.Reactors()
	for k := 0; k < goroutines; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps := make([]*engine.Promise, 0, per)
			for i := 0; i < per; i++ {
				r := g.Next()
				root := engine.New(r)
				id := int64(k*per + i)
				root.Add(func(as *engine.Steps) {
					if g.Current() != r {
						as.Error("WrongLoop", "step ran off its reactor")
					}
					if r == rs[0] {
						perReactor[0].Add(1)
					} else {
						perReactor[1].Add(1)
					}
					ext := as.External()
					go func() { ext.Success(engine.Int(id)) }()
				})
				root.Repeat(3, func(as *engine.Steps, i int) {
					if i == 1 {
						as.SetTimeout(time.Hour) // armed and dropped: the step succeeds at once
					}
					as.Success(engine.Int(as.Arg(0).Int()))
				})
				root.Add(func(as *engine.Steps) {
					p := as.Parallel()
					p.Add(func(as *engine.Steps) {})
					p.Add(func(as *engine.Steps) {
						ext := as.External()
						go func() { ext.Success() }()
					})
				})
				root.Add(func(as *engine.Steps) { as.Success(engine.Int(id * 2)) })
				ps = append(ps, root.Promise())
			}
			for i, p := range ps {
				select {
				case <-p.Done():
				case <-time.After(reactortest.Hang):
					errs <- "flow did not end"
					return
				}
				args, err := p.Wait()
				if id := int64(k*per + i); err != nil || args.At(0).Int() != id*2 {
					errs <- fmt.Sprintf("flow %d: %v %v", id, args, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if a, b := perReactor[0].Load(), perReactor[1].Load(); a != b || a+b != goroutines*per {
		t.Fatalf("flows ran %d / %d on the two reactors, want %d each", a, b, goroutines*per/2)
	}
	closed = true
	if err := g.Close(); err != nil {
		t.Fatalf("Group.Close = %v", err)
	}
	for i, r := range rs {
		if st := engine.StatsOf(r); st.FramesLive != 0 || st.FlowsLive != 0 {
			t.Fatalf("reactor %d after every flow ended: %+v", i, st)
		}
	}
	// The goroutines that completed Externals are gone too.
	n := goroutinesButReclaim()
	for i := 0; i < 200 && n > g0; i++ {
		time.Sleep(10 * time.Millisecond)
		n = goroutinesButReclaim()
	}
	if n > g0 {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines: %d before, %d after Group.Close\n%s", g0, n, buf[:runtime.Stack(buf, true)])
	}
}

// goroutinesButReclaim counts the goroutines but internal/reclaim's
// collection, which the engine's trims start on their own (it sleeps
// Settle, and longer while collections back off) and which no flow owns.
func goroutinesButReclaim() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, "internal/reclaim.collect") {
			n++
		}
	}
	return n
}

// ------------------------------------------------------------------- Close

// Flows still running at Close end with Canceled, info "reactor closed";
// their cancel handlers run and no error handler does. Execute after Close
// ends the flow with InternalError.
func TestRealCloseEndsRunningFlows(t *testing.T) {
	r, err := reactor.New(reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- r.Run() }()
	const n = 100
	type res struct {
		p       *engine.Promise
		log     []string
		started chan struct{}
		ext     engine.External
	}
	rs := make([]*res, n)
	for i := range rs {
		x := &res{started: make(chan struct{})}
		rs[i] = x
		root := engine.New(r)
		switch i % 3 {
		case 0: // waits for an External that never comes
			root.Add(func(as *engine.Steps) {
				as.SetCancel(func(*engine.Steps) { x.log = append(x.log, "cancel") })
				x.ext = as.External()
				close(x.started)
			}, func(as *engine.Steps, code string) { x.log = append(x.log, "handler "+code) })
		case 1: // waits on a long timeout
			root.Add(func(as *engine.Steps) {
				as.SetTimeout(time.Hour)
				as.SetCancel(func(*engine.Steps) { x.log = append(x.log, "cancel") })
				close(x.started)
			}, func(as *engine.Steps, code string) { x.log = append(x.log, "handler "+code) })
		default: // one loops forever (each costs the loop a full turn budget per iteration); the rest wait
			if i != 2 {
				root.Add(func(as *engine.Steps) {
					as.SetCancel(func(*engine.Steps) { x.log = append(x.log, "cancel") })
					as.WaitExternal()
					close(x.started)
				}, func(as *engine.Steps, code string) { x.log = append(x.log, "handler "+code) })
				break
			}
			root.Add(func(as *engine.Steps) {
				as.SetCancel(func(*engine.Steps) { x.log = append(x.log, "cancel") })
				close(x.started)
				as.Loop(func(as *engine.Steps) { as.Add(func(as *engine.Steps) {}) })
			}, func(as *engine.Steps, code string) { x.log = append(x.log, "handler "+code) })
		}
		x.p = root.Promise()
	}
	for _, x := range rs {
		select {
		case <-x.started:
		case <-time.After(reactortest.Hang):
			t.Fatal("flow did not start")
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-runErr; err != nil {
		t.Fatalf("Run = %v", err)
	}
	for i, x := range rs {
		if !isDone(x.p) {
			t.Fatalf("flow %d still waiting after Close returned", i)
		}
		_, err := x.p.Wait()
		wantCode(t, err, engine.Canceled)
		if info := errInfo(err); info != "reactor closed" {
			t.Fatalf("flow %d: info %q, want %q", i, info, "reactor closed")
		}
		if !slices.Equal(x.log, []string{"cancel"}) {
			t.Fatalf("flow %d: %q, want its cancel handler only", i, x.log)
		}
		if x.ext.Valid() || x.ext.Success() {
			t.Fatalf("flow %d: External still usable after Close", i)
		}
	}
	// After Close.
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { t.Error("step ran after Close") })
	_, err = realWait(t, root.Promise(), "Execute after Close")
	wantCode(t, err, engine.InternalError)
	if info := errInfo(err); info != "reactor closed" {
		t.Fatalf("Execute after Close: info %q", info)
	}
	if st := engine.StatsOf(r); st.FramesLive != 0 || st.FlowsLive != 0 {
		t.Fatalf("after Close: %+v", st)
	}
}

// A flow whose Execute was accepted just before Close (still in the ring)
// ends too, with Canceled: nobody waits forever.
func TestRealCloseRightAfterExecute(t *testing.T) {
	for i := 0; i < 50; i++ {
		r, err := reactor.New(reactor.Options{CPU: -1})
		if err != nil {
			t.Fatal(err)
		}
		runErr := make(chan error, 1)
		go func() { runErr <- r.Run() }()
		onRealLoop(t, r, func() {}) // the loop runs (Close racing Run is a reactor test)
		var ps []*engine.Promise
		for k := 0; k < 20; k++ {
			root := engine.New(r)
			root.Add(func(as *engine.Steps) { as.WaitExternal() })
			ps = append(ps, root.Promise())
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-runErr; err != nil {
			t.Fatal(err)
		}
		for k, p := range ps {
			if !isDone(p) {
				t.Fatalf("round %d flow %d: not ended after Close returned", i, k)
			}
			_, err := p.Wait()
			if c := codeOf(err); c != engine.Canceled || errInfo(err) != "reactor closed" {
				t.Fatalf("round %d flow %d: %v, want Canceled: reactor closed", i, k, err)
			}
		}
	}
}

// Another layer's attachment to a reactor, made first, does not stop the
// engine from attaching its own (reactor.ExtOrInit is keyed).
func TestEngineBesideAnotherExt(t *testing.T) {
	r := reactor.NewManual()
	reactor.X.ExtOrInit(r, reactor.X.NewExtKey("other"), func() reactor.Ext { return reactor.Ext{Value: "not the engine"} })
	ran := false
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { ran = true })
	root.Execute()
	r.RunUntilIdle()
	if !ran {
		t.Fatal("the flow did not run on a reactor with another attachment")
	}
}
