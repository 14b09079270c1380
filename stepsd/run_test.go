//go:build linux

package stepsd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// sendAs writes lines in one write: inline commands, or (framed) each as
// a RESP array of its words, as Redis clients send them. Framed requests
// of a connection with nothing in flight are answered by a direct run
// (flow.startDirect); inline ones by a run of request objects.
func (c *client) sendAs(framed bool, lines ...string) {
	c.t.Helper()
	if !framed {
		c.send(lines...)
		return
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(resp(strings.Fields(l)...))
	}
	c.sendRaw(b.String())
}

// forms runs f for inline and for framed requests.
func forms(t *testing.T, f func(t *testing.T, framed bool)) {
	for _, framed := range []bool{false, true} {
		name := "inline"
		if framed {
			name = "framed"
		}
		t.Run(name, func(t *testing.T) { f(t, framed) })
	}
}

// TestReadRunsAsOneStep: the requests of a read that are answered within a
// step run as one step, the Limiter entered once for them all (flow.run),
// and each still gets its own reply and count.
func TestReadRunsAsOneStep(t *testing.T) { forms(t, testReadRunsAsOneStep) }

func testReadRunsAsOneStep(t *testing.T, framed bool) {
	s := start(t, Config{Reactors: 1})
	c := dial(t, s)
	c.send("PING")
	c.expect("PONG")
	ctx := context.Background()
	before := s.Metrics(ctx).Reactors[0].StepsRun
	var lines, want []string
	for i := 0; i < 8; i++ {
		lines = append(lines, fmt.Sprintf("SET k%d v%d", i, i), fmt.Sprintf("GET k%d", i), "BOGUS", "ECHO e")
		want = append(want, "OK", fmt.Sprintf("v%d", i), "-ERR", "e")
	}
	c.sendAs(framed, lines...)
	for _, w := range want {
		got, err := c.read()
		if err != nil || !strings.HasPrefix(got, w) {
			t.Fatalf("reply %q, %v; want %q", got, err, w)
		}
	}
	m := s.Metrics(ctx)
	if n := m.Reactors[0].StepsRun - before; n >= 8 {
		t.Errorf("%d steps for a read of 32 requests answered at once, want a few", n)
	}
	if m.Concurrency.Holders != 0 || m.Rate.Holders == 0 {
		t.Errorf("after the run: concurrency %+v, rate %+v; want no holder and the entries spent", m.Concurrency, m.Rate)
	}
	checkNoStrays(t, s)
}

// TestRunNeedsOneSlot: a read of more requests than the Limiter has free
// slots is served whole, as with a step per request: its requests are
// inside one after another, so they need one slot between them.
func TestRunNeedsOneSlot(t *testing.T) { forms(t, testRunNeedsOneSlot) }

func testRunNeedsOneSlot(t *testing.T, framed bool) {
	s := start(t, Config{Concurrent: 2, Queue: 0, Reactors: 1})
	busy, other := dial(t, s), dial(t, s)
	busy.send("SLEEP 300")
	waitHolders(t, s, 1)
	var lines, want []string
	for i := 0; i < 10; i++ {
		lines = append(lines, fmt.Sprintf("ECHO %d", i))
		want = append(want, fmt.Sprint(i))
	}
	other.sendAs(framed, lines...)
	other.expect(want...)
	if m := s.Metrics(context.Background()); m.Concurrency.Rejected != 0 || m.Concurrency.Holders != 1 {
		t.Errorf("Limiter %+v; want the SLEEP's slot alone held and nothing rejected", m.Concurrency)
	}
	busy.expect("OK")
	checkNoStrays(t, s)
}

// TestRunStopsAtTheRate: a read longer than the rate's budget left: the
// requests the budget covers are answered, and each after them enters the
// Limiter as itself: refused with DefenseRejected with no Burst, queued
// for the next period while the Burst has room, in order.
func TestRunStopsAtTheRate(t *testing.T) { forms(t, testRunStopsAtTheRate) }

func testRunStopsAtTheRate(t *testing.T, framed bool) {
	t.Run("no burst", func(t *testing.T) {
		s := start(t, Config{Rate: 3, Reactors: 1})
		c := dial(t, s)
		c.sendAs(framed, "ECHO a", "SET k 1", "ECHO c", "BOGUS", "GET k", "ECHO e")
		want := []string{"a", "OK", "c", "-ERR unknown command", "-DefenseRejected", "-DefenseRejected"}
		for _, w := range want {
			if got, err := c.read(); err != nil || !strings.HasPrefix(got, w) {
				t.Fatalf("reply %q, %v; want %q", got, err, w)
			}
		}
		m := s.Metrics(context.Background())
		if m.Rate.Rejected != 2 || m.Rate.Holders != 3 || m.Concurrency.Holders != 0 {
			t.Errorf("concurrency %+v, rate %+v; want 3 entries, 2 rejected, no holder", m.Concurrency, m.Rate)
		}
		checkNoStrays(t, s)
	})
	t.Run("burst", func(t *testing.T) {
		s := start(t, Config{Rate: 2, Burst: 2, Reactors: 1, Timeout: 10 * time.Second})
		c := dial(t, s)
		// The SET and GET after the budget wait for the next period in
		// the rate's queue (the GET behind the SET, for its turn too);
		// the last ECHO finds the queue full.
		c.sendAs(framed, "SET k 1", "ECHO b", "SET k 2", "GET k", "ECHO e")
		c.expect("OK", "b")
		got, err := c.read() // the next period: after about a second
		if err != nil || got != "OK" {
			t.Fatalf("reply %q, %v; want OK", got, err)
		}
		c.expect("2")
		if got, _ := c.read(); !strings.HasPrefix(got, "-DefenseRejected") {
			t.Fatalf("reply %q, want -DefenseRejected", got)
		}
		if m := s.Metrics(context.Background()); m.Rate.Rejected != 1 || m.Rate.Queued != 0 || m.Concurrency.Holders != 0 {
			t.Errorf("concurrency %+v, rate %+v", m.Concurrency, m.Rate)
		}
		checkNoStrays(t, s)
	})
}

// TestRunThenWaitersTimeOutOrReset: the requests of a read after its run
// that wait in the Limiter's queue (the rate spent by the run) end as
// themselves: with -Timeout at their deadline, or, when the connection is
// reset, canceled, leaving the queue at once. The run's own replies stand.
func TestRunThenWaitersTimeOutOrReset(t *testing.T) { forms(t, testRunThenWaitersTimeOutOrReset) }

func testRunThenWaitersTimeOutOrReset(t *testing.T, framed bool) {
	t.Run("timeout", func(t *testing.T) {
		s := start(t, Config{Rate: 2, Burst: 4, Reactors: 1, Timeout: 100 * time.Millisecond})
		c := dial(t, s)
		c.sendAs(framed, "SET k v", "ECHO b", "GET k", "ECHO d", "DEL k")
		c.expect("OK", "b")
		for i := 0; i < 3; i++ {
			if got, err := c.read(); err != nil || !strings.HasPrefix(got, "-Timeout") {
				t.Fatalf("reply %d after the run: %q, %v; want -Timeout", i, got, err)
			}
		}
		waitFor(t, 2*time.Second, "the timed-out requests to leave the rate's queue", func() bool {
			_, r := s.limiterStats()
			return r.Queued == 0
		})
		checkNoStrays(t, s)
	})
	t.Run("reset", func(t *testing.T) {
		s := start(t, Config{Rate: 2, Burst: 4, Reactors: 1, Timeout: 10 * time.Second})
		c := dial(t, s)
		c.sendAs(framed, "SET k v", "ECHO b", "GET k", "ECHO d", "DEL k")
		c.expect("OK", "b")
		waitFor(t, 2*time.Second, "the requests after the run to queue", func() bool {
			_, r := s.limiterStats()
			return r.Queued == 3
		})
		_ = c.c.SetLinger(0)
		_ = c.c.Close()
		waitFor(t, 2*time.Second, "the reset connection's requests to leave the rate's queue", func() bool {
			conc, r := s.limiterStats()
			return r.Queued == 0 && conc.Holders == 0
		})
		checkNoStrays(t, s)
	})
}

// TestRunnable: which requests at the head of a flow a run may take (the
// Limiter entries it asks for): up to a SLEEP, and up to a key command
// unless every earlier key command of the connection has gone.
func TestRunnable(t *testing.T) {
	type r struct {
		op         Op
		bad        bool
		dispatched bool // an earlier request's: its key command went
	}
	tests := []struct {
		name      string
		earlier   []r // the connection's requests before the flow's, from its cursor
		flow      []r
		turnWaits int
		want      int // entries
		wantEnd   int // the run's last request, by its place in the flow; -1: none
	}{
		{"all at once", nil, []r{{op: OpSet}, {op: OpGet}, {op: OpEcho}, {op: OpDel}}, 0, 4, 3},
		{"bad ones need no entry", nil, []r{{op: OpEcho}, {bad: true}, {op: OpGet}}, 0, 2, 2},
		{"up to a SLEEP", nil, []r{{op: OpEcho}, {op: OpSet}, {op: OpSleep}, {op: OpGet}}, 0, 2, 1},
		{"SLEEP first", nil, []r{{op: OpSleep}, {op: OpEcho}}, 0, 0, -1},
		{"earlier key command gone", []r{{op: OpSleep}, {op: OpSet, dispatched: true}}, []r{{op: OpGet}, {op: OpEcho}}, 0, 2, 1},
		{"earlier key command not gone", []r{{op: OpSet}}, []r{{op: OpEcho}, {op: OpGet}, {op: OpEcho}}, 0, 1, 0},
		{"a key command waits for its turn", nil, []r{{op: OpPing}, {op: OpSet}}, 1, 1, 0},
		{"waits, but no key command", nil, []r{{op: OpPing}, {op: OpEcho}}, 1, 2, 1},
	}
	for _, tc := range tests {
		cn := &conn{turnWaits: tc.turnWaits}
		fl := &flow{}
		var prev *request
		link := func(x r) *request {
			rq := &request{cn: cn, op: x.op, dispatched: x.dispatched}
			if x.bad {
				rq.bad = "bad"
			}
			if prev == nil {
				cn.cursor = rq
			} else {
				prev.next = rq
			}
			prev = rq
			return rq
		}
		for _, x := range tc.earlier {
			link(x)
		}
		var in []*request
		for _, x := range tc.flow {
			rq := link(x)
			in = append(in, rq)
			fl.add(rq, nil)
		}
		got, end := fl.runnable()
		var wantEnd *request
		if tc.wantEnd >= 0 {
			wantEnd = in[tc.wantEnd]
		}
		if got != tc.want || end != wantEnd {
			t.Errorf("%s: runnable %d ending at %p, want %d ending at %p (request %d)", tc.name, got, end, tc.want, wantEnd, tc.wantEnd)
		}
	}
}

// TestRunRequestPanics: a request whose work panics inside a run (here a
// key command, with the server's store taken away) is answered
// InternalError alone, as with a section per request: the run's other
// requests keep their replies, and the Limiter is left.
func TestRunRequestPanics(t *testing.T) { forms(t, testRunRequestPanics) }

func testRunRequestPanics(t *testing.T, framed bool) {
	s := start(t, Config{Reactors: 1})
	c := dial(t, s)
	sh := s.shards[0]
	done := make(chan *store, 1)
	sh.r.Immediate(func() { k := s.keys; s.keys = nil; done <- k })
	keys := <-done
	c.sendAs(framed, "ECHO a", "SET k v", "ECHO b", "GET k", "ECHO c")
	want := []string{"a", "-InternalError", "b", "-InternalError", "c"}
	for _, w := range want {
		if got, err := c.read(); err != nil || !strings.HasPrefix(got, w) {
			t.Fatalf("reply %q, %v; want %q", got, err, w)
		}
	}
	sh.r.Immediate(func() { s.keys = keys; done <- nil })
	<-done
	c.sendAs(framed, "SET k v", "GET k")
	c.expect("OK", "v")
	if m := s.Metrics(context.Background()); m.Concurrency.Holders != 0 {
		t.Errorf("Limiter %+v after the run, want no holder", m.Concurrency)
	}
	checkNoStrays(t, s)
}

// TestDirectRunEdges: a direct run (framed requests answered from their
// parse) and what it shares a read or a connection with.
func TestDirectRunEdges(t *testing.T) {
	t.Run("then a fatal framing error", func(t *testing.T) {
		// The run's replies leave before the error, then the close.
		s := start(t, Config{Reactors: 1})
		c := dial(t, s)
		c.sendRaw(resp("PING") + resp("ECHO", "x") + "*2\r\n$3\r\nGET\r\nfoo\r\n")
		c.expect("PONG", "x")
		if got, _ := c.read(); !strings.HasPrefix(got, "-ERR") {
			t.Fatalf("reply %q, want -ERR (framing lost)", got)
		}
		c.expectEOF()
	})
	t.Run("then what it cannot answer", func(t *testing.T) {
		// A SLEEP, an inline command, QUIT end the direct head; their
		// replies follow the run's, in order.
		s := start(t, Config{Reactors: 1})
		c := dial(t, s)
		c.sendRaw(resp("SET", "k", "1") + resp("DEL", "k", "j") + resp("SLEEP", "10") + "GET k\r\n" + resp("ECHO", "e") + resp("QUIT"))
		c.expect("OK", ":1", "OK", "(nil)", "e", "OK")
		c.expectEOF()
		checkNoStrays(t, s)
	})
	t.Run("behind a request in flight", func(t *testing.T) {
		// A connection with a request in flight answers the next read
		// through request objects: its replies wait for the SLEEP's.
		s := start(t, Config{Reactors: 1})
		c := dial(t, s)
		c.sendRaw(resp("SLEEP", "50"))
		c.sendRaw(resp("SET", "k", "2") + resp("GET", "k"))
		c.expect("OK", "OK", "2")
		checkNoStrays(t, s)
	})
	t.Run("larger than MaxPipeline", func(t *testing.T) {
		// The run counts against MaxPipeline: reading stops and
		// resumes once its replies are out.
		s := start(t, Config{Reactors: 1, MaxPipeline: 4})
		c := dial(t, s)
		var b strings.Builder
		var want []string
		for i := 0; i < 20; i++ {
			b.WriteString(resp("ECHO", fmt.Sprint(i)))
			want = append(want, fmt.Sprint(i))
		}
		c.sendRaw(b.String())
		c.expect(want...)
	})
	t.Run("replies larger than a chunk", func(t *testing.T) {
		s := start(t, Config{Reactors: 1})
		c := dial(t, s)
		v := strings.Repeat("v", 100<<10)
		c.sendRaw(resp("SET", "big", v))
		c.expect("OK")
		var b strings.Builder
		var want []string
		for i := 0; i < 8; i++ {
			b.WriteString(resp("GET", "big"))
			want = append(want, v)
		}
		b.WriteString(resp("ECHO", "end"))
		c.sendRaw(b.String())
		c.expect(append(want, "end")...)
	})
	t.Run("counts its requests", func(t *testing.T) {
		s := start(t, Config{Reactors: 1})
		c := dial(t, s)
		c.sendRaw(resp("SET", "k", "v") + resp("GET", "k") + resp("GET", "k") + resp("PING") + resp("BOGUS"))
		c.expect("OK", "v", "v", "PONG")
		if got, _ := c.read(); !strings.HasPrefix(got, "-ERR unknown command") {
			t.Fatalf("reply %q, want -ERR unknown command", got)
		}
		counts := map[string]CommandMetrics{}
		for _, x := range s.Metrics(context.Background()).Commands[0] {
			counts[x.Command] = x
		}
		for cmd, n := range map[string]uint64{"SET": 1, "GET": 2, "PING": 1} {
			if x := counts[cmd]; x.Started != n || x.Succeeded != n || x.Failed != 0 {
				t.Errorf("%s: %+v, want %d started and succeeded", cmd, x, n)
			}
		}
		if x := counts[invalidName.String()]; x.Started != 1 || x.Failed != 1 {
			t.Errorf("%s: %+v, want 1 started and failed", invalidName, x)
		}
	})
}

// TestDirectRunCountsOneCommand: a direct run whose requests are all one
// command counts them once, after its loop; one that panics counts, in
// directError, those of its call answered before the failed one, and the
// failed one. Every request is counted started and ended exactly once,
// whether the run is of one command or mixed, succeeds or fails.
func TestDirectRunCountsOneCommand(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	c := dial(t, s)
	sh := s.shards[0]
	counts := func() map[string]CommandMetrics {
		m := s.Metrics(context.Background())
		out := map[string]CommandMetrics{}
		for _, x := range m.Commands[0] {
			out[x.Command] = x
		}
		return out
	}
	c.sendRaw(resp("SET", "a", "1") + resp("SET", "b", "2") + resp("SET", "c", "3"))
	c.expect("OK", "OK", "OK")
	c.sendRaw(resp("ECHO", "x") + resp("PING") + resp("ECHO", "y"))
	c.expect("x", "PONG", "y")
	if m := counts(); m["SET"].Started != 3 || m["SET"].Succeeded != 3 || m["ECHO"].Started != 2 || m["PING"].Started != 1 {
		t.Fatalf("after the runs: SET %+v, ECHO %+v, PING %+v", m["SET"], m["ECHO"], m["PING"])
	}
	// A run of SETs whose second panics (its key's stripe has no map: a
	// new key's insert panics), between two that do not: directError
	// counts the first, answered in the same call, and the failed one;
	// the loop it adds counts the third.
	bad := "b"
	for s.keys.stripeOf([]byte(bad)) == s.keys.stripeOf([]byte("p")) || s.keys.stripeOf([]byte(bad)) == s.keys.stripeOf([]byte("q")) {
		bad += "b"
	}
	done := make(chan map[string]*entry, 1)
	st := s.keys.stripeOf([]byte(bad))
	sh.r.Immediate(func() { st.mu.Lock(); m := st.m; st.m = nil; st.mu.Unlock(); done <- m })
	m := <-done
	c.sendRaw(resp("SET", "p", "1") + resp("SET", bad, "2") + resp("SET", "q", "3"))
	c.expect("OK")
	if got, err := c.read(); err != nil || !strings.HasPrefix(got, "-InternalError") {
		t.Fatalf("reply %q, %v; want -InternalError", got, err)
	}
	c.expect("OK")
	// The panic left no lock held (directError gave it back): the map
	// goes back under it.
	if !st.mu.TryLock() {
		t.Fatal("the panicking SET's stripe is still locked")
	}
	st.m = m
	st.mu.Unlock()
	if m := counts()["SET"]; m.Started != 6 || m.Failed != 1 || m.Succeeded != 5 {
		t.Fatalf("SET %+v, want 6 started, 1 failed, 5 succeeded", m)
	}
	checkNoStrays(t, s)
}

// TestStorePanicReleasesStripe: a panic inside the store's critical
// section (applyTo, apply: a new key's insert into a stripe whose map was
// taken away) leaves no stripe locked, whichever step it ran in: the
// request is answered with InternalError, and the stripe's lock is free
// for every reactor at once (a lock left held would block the loop of
// every later request on a key of the stripe).
func TestStorePanicReleasesStripe(t *testing.T) {
	s := start(t, Config{Reactors: 2})
	for _, tc := range []struct {
		name, before string
		want         []string // the replies before the failed SET's
	}{
		{"direct run (applyTo)", "", nil},
		{"run step (apply)", "PING\r\n", []string{"PONG"}},
		{"request behind a SLEEP (apply)", resp("SLEEP", "1"), []string{"OK"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s)
			key := "panic:" + tc.name
			st := s.keys.stripeOf([]byte(key))
			st.mu.Lock()
			m := st.m
			st.m = nil
			st.mu.Unlock()
			c.sendRaw(tc.before + resp("SET", key, "v"))
			c.expect(tc.want...)
			if got, err := c.read(); err != nil || !strings.HasPrefix(got, "-InternalError") {
				t.Fatalf("reply %q, %v; want -InternalError", got, err)
			}
			// The reply is written after the step's error handler ran.
			if !st.mu.TryLock() {
				t.Fatal("the stripe's lock is still held after the panic")
			}
			st.m = m
			st.mu.Unlock()
			// Its keys work again, from any reactor.
			for range 4 {
				o := dial(t, s)
				o.sendRaw(resp("SET", key, "w") + resp("GET", key))
				o.expect("OK", "w")
			}
			c.sendRaw(resp("GET", key))
			c.expect("w")
		})
	}
	checkNoStrays(t, s)
}
