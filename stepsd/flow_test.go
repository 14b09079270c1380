//go:build linux

package stepsd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// waitHolders waits until the server's Limiter has n requests inside (a
// SLEEP holding its slot), so a test knows the Limiter is full without
// sleeping for it.
func waitHolders(t *testing.T, s *Server, n int) {
	t.Helper()
	waitLimiter(t, s, fmt.Sprintf("the Limiter to hold %d requests", n), func(c syncprim.Stats) bool { return c.Holders == n })
}

// waitLimiter polls the server's Limiter until ok holds, for up to
// reactortest.Hang (its state is on the reactors: there is no event to
// wait on from here), and fails t naming what it waited for.
func waitLimiter(t *testing.T, s *Server, what string, ok func(syncprim.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(reactortest.Hang)
	for {
		c := s.Metrics(context.Background()).Concurrency
		if ok(c) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v", what, c)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestReadIsShedLikeItsRequests: the requests of one read enter the
// Limiter one by one, as with a flow per request. With the only slot held
// and a queue of one, the first of a pipelined read is queued and the
// others are refused with DefenseRejected at once, each with its own
// reply: they do not wait, unseen by the Limiter, behind the queued one.
//
// The busy SLEEP lasts four minutes; it is let go (a reset) only once the
// Limiter shows the read shed (one queued, two rejected), so a loaded
// machine cannot end it before the read arrives.
func TestReadIsShedLikeItsRequests(t *testing.T) {
	s := start(t, Config{Concurrent: 1, Queue: 1, Reactors: 1, Timeout: 5 * time.Minute})
	busy, other := dial(t, s), dial(t, s)
	busy.send("SLEEP 240000")
	waitHolders(t, s, 1)
	other.send("ECHO a", "ECHO b", "BOGUS", "ECHO c")
	waitLimiter(t, s, "one queued and two rejected", func(c syncprim.Stats) bool { return c.Queued == 1 && c.Rejected == 2 })
	_ = busy.c.SetLinger(0) // close sends RST: the SLEEP is canceled, its slot freed
	_ = busy.c.Close()
	var got []string
	for i := 0; i < 4; i++ {
		r, err := other.read()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if got[0] != "a" || !strings.HasPrefix(got[1], "-DefenseRejected") ||
		!strings.HasPrefix(got[2], "-ERR unknown command") || !strings.HasPrefix(got[3], "-DefenseRejected") {
		t.Fatalf("replies %q; want a (queued), -DefenseRejected, -ERR unknown command, -DefenseRejected", got)
	}
	m := s.Metrics(context.Background())
	if m.Concurrency.Rejected != 2 {
		t.Errorf("Limiter rejected %d, want 2", m.Concurrency.Rejected)
	}
	other.send("ECHO d", "ECHO e") // the slot is free again: both served
	other.expect("d", "e")
	checkNoStrays(t, s)
}

// TestSleepDoesNotHoldBackItsRead: a SET after a SLEEP in the same read is
// applied at once: another connection reads it before the SLEEP's reply
// (here its -Timeout) comes; only the SET's reply waits, for the order of
// replies.
func TestSleepDoesNotHoldBackItsRead(t *testing.T) {
	s := start(t, Config{Reactors: 1, Timeout: 2 * time.Second})
	a, b := dial(t, s), dial(t, s)
	a.send("SLEEP 60000", "SET k v", "ECHO after")
	first := make(chan string, 1)
	go func() {
		got, err := a.read()
		first <- fmt.Sprint(got, err)
	}()
	for {
		b.send("GET k")
		got, err := b.read()
		if err != nil {
			t.Fatal(err)
		}
		if got == "v" {
			break
		}
		select {
		case r := <-first:
			t.Fatalf("the SLEEP answered (%s) before the SET after it in its read was applied", r)
		default:
		}
	}
	_ = a.c.SetLinger(0)
	_ = a.c.Close() // cancels the SLEEP
	<-first
	checkNoStrays(t, s)
}

// TestTimeoutInReadIsPerRequest: a request of a read that times out
// answers -Timeout alone; its neighbours before and after it in the same
// read keep their replies.
func TestTimeoutInReadIsPerRequest(t *testing.T) {
	s := start(t, Config{Timeout: 100 * time.Millisecond, Reactors: 1})
	c := dial(t, s)
	c.send("SET k1 v1", "SLEEP 5000", "GET k1", "ECHO e", "SLEEP 10")
	got, err := c.read()
	if err != nil || got != "OK" {
		t.Fatalf("reply %q, %v; want OK", got, err)
	}
	got, err = c.read()
	if err != nil || !strings.HasPrefix(got, "-Timeout") {
		t.Fatalf("reply %q, %v; want -Timeout", got, err)
	}
	c.expect("v1", "e", "OK")
	checkNoStrays(t, s)
}

// TestOneFlowPerRead: a pipelined read runs as one flow (the engine
// counts flows), while stepsd counts its requests by command.
func TestOneFlowPerRead(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	c := dial(t, s)
	c.send("PING")
	c.expect("PONG")
	ctx := context.Background()
	before := s.Metrics(ctx).Reactors[0].FlowsStarted
	var lines, want []string
	for i := 0; i < 16; i++ {
		lines = append(lines, fmt.Sprintf("SET k%d v%d", i, i), fmt.Sprintf("GET k%d", i))
		want = append(want, "OK", fmt.Sprintf("v%d", i))
	}
	c.send(lines...) // one write: on loopback, one read (or a few)
	c.expect(want...)
	m := s.Metrics(ctx)
	if n := m.Reactors[0].FlowsStarted - before; n == 0 || n >= 32 {
		t.Errorf("%d flows for 32 pipelined requests, want fewer than one per request", n)
	}
	counts := map[string]CommandMetrics{}
	for _, x := range m.Commands[0] {
		counts[x.Command] = x
	}
	for cmd, n := range map[string]uint64{"SET": 16, "GET": 16, "PING": 1} {
		x := counts[cmd]
		if x.Started != n || x.Succeeded != n || x.Failed != 0 || x.Canceled != 0 {
			t.Errorf("%s: %+v, want %d started and succeeded", cmd, x, n)
		}
	}
	var named bool
	for _, x := range m.Reactors[0].ByName {
		named = named || x.Name == pipelineName.String()
	}
	if !named {
		t.Errorf("no flow named %s for a read of SETs and GETs: %+v", pipelineName, m.Reactors[0].ByName)
	}
}

// TestCommandMetricsCountOutcomes: an error reply counts as failed, a
// request whose connection went away first as canceled.
func TestCommandMetricsCountOutcomes(t *testing.T) {
	s := start(t, Config{Reactors: 1, Timeout: 5 * time.Minute})
	c := dial(t, s)
	c.send("BOGUS", "ECHO x", "SLEEP 240000") // the SLEEP cannot end before the reset
	got, _ := c.read()
	if !strings.HasPrefix(got, "-ERR") {
		t.Fatalf("reply %q, want -ERR", got)
	}
	c.expect("x")
	_ = c.c.SetLinger(0)
	_ = c.c.Close() // a reset: the SLEEP is abandoned
	var counts map[string]CommandMetrics
	waitFor(t, reactortest.Hang, "the reset SLEEP counted canceled", func() bool {
		counts = commandCounts(s)
		return counts["SLEEP"].Canceled == 1
	})
	inv, echo, sl := counts[invalidName.String()], counts["ECHO"], counts["SLEEP"]
	if inv.Failed != 1 || echo.Succeeded != 1 || sl.Started != 1 || sl.Succeeded+sl.Failed != 0 {
		t.Fatalf("INVALID %+v, ECHO %+v, SLEEP %+v", inv, echo, sl)
	}
}

// TestQueuedReadGoesOnInOrder: a read whose first request waits in the
// Limiter's queue: the requests behind it queue too, each as itself, and
// once the slot frees they run in order (the GET sees the SET before it),
// and the read's flow, split, ends after its one request without entering
// the Limiter again.
//
// The busy SLEEP lasts four minutes and is let go (a reset) once the
// read's first request is seen queued: the read surely waited.
func TestQueuedReadGoesOnInOrder(t *testing.T) {
	s := start(t, Config{Concurrent: 1, Queue: 10, Reactors: 1, Timeout: 5 * time.Minute})
	busy, other := dial(t, s), dial(t, s)
	busy.send("SLEEP 240000")
	waitHolders(t, s, 1)
	other.send("SET k 1", "GET k", "BOGUS", "SLEEP 1", "ECHO x")
	waitLimiter(t, s, "the read's first request queued", func(c syncprim.Stats) bool { return c.Queued >= 1 })
	_ = busy.c.SetLinger(0) // close sends RST: the SLEEP is canceled, its slot freed
	_ = busy.c.Close()
	got, err := other.read()
	if err != nil || got != "OK" {
		t.Fatalf("reply %q, %v; want OK", got, err)
	}
	other.expect("1")
	if got, _ := other.read(); !strings.HasPrefix(got, "-ERR unknown command") {
		t.Fatalf("reply %q, want -ERR unknown command", got)
	}
	other.expect("OK", "x")
	m := s.Metrics(context.Background())
	if m.Concurrency.Rejected != 0 || m.Concurrency.Holders != 0 || m.Concurrency.Queued != 0 {
		t.Errorf("Limiter %+v after every request was answered, want it empty and nothing rejected", m.Concurrency)
	}
	other.send("ECHO y") // the connection and the Limiter go on
	other.expect("y")
	checkNoStrays(t, s)
}

// checkNoStrays fails t if a split flow ran a step past its last request
// (strayStep): that step entered the Limiter for no request.
func checkNoStrays(t *testing.T, s *Server) {
	t.Helper()
	for _, sh := range s.shards {
		ch := make(chan int, 1)
		sh.r.Immediate(func() { ch <- sh.strays })
		if n := <-ch; n != 0 {
			t.Errorf("reactor %d: %d steps of split flows ran past their last request", sh.idx, n)
		}
	}
}

// TestReadPastTheTurnBudget: a read of more requests than the engine runs
// steps of one flow in a turn (4,096) is split where the budget stopped
// it, and every request is answered, in order.
func TestReadPastTheTurnBudget(t *testing.T) {
	const n = 6000
	s := start(t, Config{Reactors: 1, MaxPipeline: 2 * n})
	c := dial(t, s)
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "ECHO %d\r\n", i)
	}
	go func() { _, _ = c.c.Write([]byte(b.String())) }()
	for i := 0; i < n; i++ {
		got, err := c.read()
		if err != nil || got != fmt.Sprint(i) {
			t.Fatalf("reply %d: %q, %v", i, got, err)
		}
	}
	checkNoStrays(t, s)
	t.Logf("%d flows for %d requests", s.Metrics(context.Background()).Reactors[0].FlowsStarted, n)
}

// TestSplitReadFlowsSucceed: a read split where a request waits (a SLEEP,
// a key command behind it, a queued Limiter) ends every flow it made as a
// success when every request was answered: the engine's failed flows
// (asyncsteps_flows_ended_total{result="failed"} in cmd/stepsd) count no
// split, so an operator who watches them sees real failures only.
func TestSplitReadFlowsSucceed(t *testing.T) {
	s := start(t, Config{Reactors: 1, Concurrent: 1, Queue: 4, Timeout: 5 * time.Minute})
	c, busy := dial(t, s), dial(t, s)
	ctx := context.Background()
	before := s.Metrics(ctx).Reactors[0]
	c.send("SLEEP 1", "SET k v", "ECHO a", "SLEEP 1", "GET k")
	c.expect("OK", "OK", "a", "OK", "v")
	busy.send("SLEEP 240000")
	waitHolders(t, s, 1)
	c.send("ECHO q1", "GET k", "ECHO q2") // the first queued: the rest split off, queued too
	waitLimiter(t, s, "the read queued", func(c syncprim.Stats) bool { return c.Queued >= 1 })
	_ = busy.c.SetLinger(0) // close sends RST: the SLEEP is canceled, its slot freed
	_ = busy.c.Close()
	c.expect("q1", "v", "q2")
	after := s.Metrics(ctx).Reactors[0]
	if n := after.FlowsStarted - before.FlowsStarted; n < 4 {
		t.Fatalf("%d flows: the reads were not split", n)
	}
	if f := after.FlowsFailed - before.FlowsFailed; f != 0 {
		t.Errorf("%d flows failed, want 0: every request was answered with its reply", f)
	}
	for _, x := range after.ByName {
		if x.Failed != 0 {
			t.Errorf("flows named %s: %d failed, want 0", x.Name, x.Failed)
		}
	}
	checkNoStrays(t, s)
}

// TestTrimLeavesNoRequestOnADroppedFlow: trimRequests drops idle flows
// (releasing their roots) apart from the idle requests. A kept request
// whose last flow was dropped must not lead newRequest to that flow's
// released root (newRequest asks its flow's root whether it still runs
// when the request was the flow's cur: a call on a released root, which
// the asyncsteps_debug build panics on and the default build answers for
// the root's next owner).
func TestTrimLeavesNoRequestOnADroppedFlow(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	sh := s.shards[0]
	type result struct {
		stale bool
		got   bool
	}
	ch := make(chan result, 1)
	sh.r.Immediate(func() {
		a, b := sh.newFlow(), sh.newFlow()
		rq := sh.newRequest()
		rq.fl, a.n, a.cur = a, 1, rq
		sh.recycle(rq)                    // a's last request: a goes back to the pool
		sh.recycleFlow(b)                 // b above a in the pool
		sh.freeFlowLow = sh.freeFlowN - 1 // b was used since the last trim, a was not
		sh.freeLow = 0                    // every request was used: none dropped
		trimRequests(sh, 0)
		var r result
		for f := sh.freeFlows; f != nil; f = f.free {
			if f == a {
				ch <- r // a was kept: nothing to check
				return
			}
		}
		for x := sh.free; x != nil; x = x.next {
			if x.fl == a && a.cur == x {
				r.stale = true
			}
		}
		r.got = sh.newRequest() == rq
		ch <- r
	})
	r := <-ch
	if r.stale {
		t.Error("a kept request still is the cur of a dropped flow, whose root was released")
	}
	if !r.got {
		t.Error("newRequest did not reuse the kept request")
	}
}
