//go:build linux

package stepsd

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
)

// A whole read's flow (runWhole) is not held back (engine.X.DeferStart
// off): with nothing ready ahead, its Execute runs it, and runWhole does
// not queue it for RunReady. The pooled flows go back and forth between
// runWhole and the general path (readAll, split), which holds its roots
// back: each read here alternates the two on one connection, so a flow
// runWhole used last is taken by readAll next and the other way round.
// What must hold: every reply in order, each key command applied in
// order, the counters exact, the Limiter empty, the slots clean, no stray
// step; and with one client that waits for its replies (nothing ready
// ahead of any read) no whole read was queued (wholeQueued).
func TestWholeReadStartsInItsExecute(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	c := dial(t, s)
	sh := s.shards[0]
	const rounds = 30
	sleeps, echoes := 0, 0
	for r := 0; r < rounds; r++ {
		k, v := fmt.Sprint("k", r%4), fmt.Sprint("v", r)
		// A whole read: framed, every request direct and let in.
		c.sendRaw(resp("SET", k, v) + resp("GET", k) + resp("ECHO", v) + resp("PING"))
		c.expect("OK", v, v, "PONG")
		echoes++
		switch r % 3 {
		case 0:
			// The general path: a SLEEP at the head (no direct head),
			// a key command behind it in its own split flow.
			c.send("SLEEP 1", "SET "+k+" w"+v, "GET "+k, "ECHO x")
			c.expect("OK", "OK", "w"+v, "x")
			sleeps++
			echoes++
		case 1:
			// A direct head and a SLEEP behind it (readAll's
			// startDirect, then a split), then a whole read at once.
			c.sendRaw(resp("GET", k) + resp("SLEEP", "1") + resp("ECHO", "y"))
			c.expect(v, "OK", "y")
			sleeps++
			echoes++
		}
	}
	m := s.Metrics(context.Background())
	counts := map[string]CommandMetrics{}
	for _, x := range m.Commands[0] {
		counts[x.Command] = x
	}
	sets := rounds + (rounds+2)/3
	gets := rounds + (rounds+2)/3 + (rounds+1)/3
	for _, w := range []struct {
		cmd string
		n   int
	}{{"SET", sets}, {"GET", gets}, {"ECHO", echoes}, {"PING", rounds}, {"SLEEP", sleeps}} {
		if x := counts[w.cmd]; x.Started != uint64(w.n) || x.Succeeded != uint64(w.n) || x.Failed != 0 {
			t.Errorf("%s %+v, want %d started and succeeded", w.cmd, x, w.n)
		}
	}
	if m.Concurrency.Holders != 0 {
		t.Errorf("concurrency %+v after the reads, want no holder", m.Concurrency)
	}
	if n, flag := slotsClean(t, sh); n != 0 || flag {
		t.Errorf("%d dirty slots, reqsDirty %v after the reads", n, flag)
	}
	ch := make(chan int, 1)
	sh.r.Immediate(func() { ch <- sh.wholeQueued })
	if n := <-ch; n != 0 {
		t.Errorf("%d of %d whole reads were queued with nothing ready ahead: not started in their Execute", n, rounds)
	}
	checkNoStrays(t, s)
}

// A whole read while flows of other connections are ready or waiting
// (SLEEPs whose timers end while the whole reads arrive, the Limiter
// nearly full): whichever way its Execute went (at once, or queued behind
// a ready flow and run by RunReady), every connection's replies come in
// order and the counters add up.
func TestWholeReadBesideWaitingFlows(t *testing.T) {
	s := start(t, Config{Reactors: 1, Concurrent: 8})
	const sleepers, reads = 4, 200
	errc := make(chan error, 1)
	sl := make([]*client, sleepers)
	for i := range sl {
		sl[i] = dial(t, s)
	}
	c := dial(t, s)
	go func() {
		// The sleepers' replies, checked here and reported on errc (no
		// t.Fatal off the test's goroutine).
		var err error
		for r := 0; r < reads/10 && err == nil; r++ {
			for _, x := range sl {
				if _, werr := x.c.Write([]byte("SLEEP 1\nECHO s\n")); werr != nil {
					err = werr
				}
			}
			for _, x := range sl {
				for _, w := range []string{"OK", "s"} {
					got, rerr := x.read()
					if rerr != nil {
						err = rerr
					} else if got != w && !strings.HasPrefix(got, "-DefenseRejected") {
						err = fmt.Errorf("sleeper reply %q, want %q", got, w)
					}
				}
			}
		}
		errc <- err
	}()
	for r := 0; r < reads; r++ {
		var b strings.Builder
		var want []string
		for i := 0; i < 1+r%6; i++ {
			w := fmt.Sprint(r, ".", i)
			b.WriteString(resp("ECHO", w))
			want = append(want, w)
		}
		c.sendRaw(b.String())
		for _, w := range want {
			got, err := c.read()
			if err != nil {
				t.Fatalf("read %d: %v", r, err)
			}
			// A full Limiter refuses with DefenseRejected: allowed, in
			// its place; any other reply is out of order.
			if got != w && !strings.HasPrefix(got, "-DefenseRejected") {
				t.Fatalf("read %d: reply %q, want %q", r, got, w)
			}
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	m := s.Metrics(context.Background())
	for _, x := range m.Commands[0] {
		if x.Started != x.Succeeded+x.Failed+x.Canceled {
			t.Errorf("%s %+v: started is not the sum of its ends", x.Command, x)
		}
	}
	if m.Concurrency.Holders != 0 {
		t.Errorf("concurrency %+v after the reads, want no holder", m.Concurrency)
	}
	checkNoStrays(t, s)
}

// The pooled flows' start, on the loop outside any step with nothing
// ready: a flow wholeFlow gives (runWhole's) runs in its Execute; the same
// pooled flow taken by newFlow next (readAll's, split's) is held back
// until RunReady, and wholeFlow then lets it run at once again. A flow of
// the general path run inside its Execute would run before runNow set
// sh.inline and before splitRest moved the requests behind a wait.
func TestPooledFlowsStartAsTheirPathWants(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	sh := s.shards[0]
	ch := make(chan []string, 1)
	sh.r.Immediate(func() {
		var errs []string
		ran := false
		step := func(*engine.Steps) { ran = true }
		var prev *flow
		for i, whole := range []bool{true, false, false, true, true, false} {
			var fl *flow
			if whole {
				fl = sh.wholeFlow()
			} else {
				fl = sh.newFlow()
			}
			if prev != nil && fl != prev {
				errs = append(errs, fmt.Sprintf("take %d: not the pooled flow", i))
			}
			prev = fl
			ran = false
			fl.root.Add(step, nil)
			fl.root.Execute()
			if ran != whole {
				errs = append(errs, fmt.Sprintf("take %d (whole %v): ran in its Execute: %v", i, whole, ran))
			}
			engine.RunReady(sh.r)
			if !ran || fl.root.Executing() {
				errs = append(errs, fmt.Sprintf("take %d: not run and ended after RunReady", i))
			}
			sh.recycleFlow(fl)
		}
		ch <- errs
	})
	for _, e := range <-ch {
		t.Error(e)
	}
}

// Whole reads run in one flow the shard keeps for them (shard.whole), out
// of the pool the general path takes its flows from: the same flow read
// after read, ended and not held back between them, and never in
// freeFlows, where newFlow could take it while a whole read uses it (or
// hold its root back). Reads of the general path in between (a SLEEP,
// split flows) take their flows from the pool and leave the whole flow
// alone.
func TestWholeReadsReuseOneFlow(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	c := dial(t, s)
	sh := s.shards[0]
	check := func(r int, want *flow) *flow {
		t.Helper()
		type state struct {
			fl                   *flow
			atOnce, exec, pooled bool
			notHeldBack, inFree  int
		}
		ch := make(chan state, 1)
		sh.r.Immediate(func() {
			st := state{fl: sh.whole}
			if st.fl != nil {
				st.atOnce, st.exec = st.fl.atOnce, st.fl.root.Executing()
			}
			for f := sh.freeFlows; f != nil; f = f.free {
				if f == sh.whole {
					st.pooled = true
				}
				if f.atOnce {
					st.notHeldBack++ // counted as wrong: a pooled flow left free to start at once
				}
				st.inFree++
			}
			ch <- st
		})
		st := <-ch
		switch {
		case st.fl == nil:
			t.Fatalf("round %d: no whole flow kept after a whole read", r)
		case want != nil && st.fl != want:
			t.Errorf("round %d: whole read ran in another flow", r)
		case !st.atOnce || st.exec:
			t.Errorf("round %d: kept whole flow atOnce %v, executing %v; want true, false", r, st.atOnce, st.exec)
		case st.pooled:
			t.Errorf("round %d: the whole flow is also in the pool (%d flows there)", r, st.inFree)
		case st.notHeldBack != 0:
			t.Errorf("round %d: %d pooled flows not held back", r, st.notHeldBack)
		}
		return st.fl
	}
	var fl *flow
	for r := 0; r < 20; r++ {
		k, v := fmt.Sprint("k", r%3), fmt.Sprint("v", r)
		c.sendRaw(resp("SET", k, v) + resp("GET", k))
		c.expect("OK", v)
		fl = check(r, fl)
		if r%3 == 0 {
			c.send("SLEEP 1", "GET "+k, "ECHO x")
			c.expect("OK", v, "x")
			check(r, fl)
		}
	}
	checkNoStrays(t, s)
}
