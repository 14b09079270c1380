//go:build linux

package stepsd

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
)

// waitFor polls cond until it holds or d passes (the server's state is on
// its reactors; there is no event to wait on from here).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// commandCounts sums the server's per-command counters over its reactors.
func commandCounts(s *Server) map[string]CommandMetrics {
	sum := map[string]CommandMetrics{}
	for _, r := range s.Metrics(context.Background()).Commands {
		for _, x := range r {
			c := sum[x.Command]
			c.Command = x.Command
			c.Started += x.Started
			c.Succeeded += x.Succeeded
			c.Failed += x.Failed
			c.Canceled += x.Canceled
			sum[x.Command] = c
		}
	}
	return sum
}

// A client that fills the Limiter and resets its
// connection gives its slots back at once: its flows are canceled, not left
// to run until they end or time out.
//
// The SLEEPs last four minutes and the request timeout five, so within the
// test's waits (reactortest.Hang) nothing but the reset can give the slots
// back: no timing is asserted, and a loaded machine only makes the waits
// longer. The canceled count says the flows were canceled, not ended.
func TestResetConnectionReturnsLimiterSlots(t *testing.T) {
	s := start(t, Config{Concurrent: 10, Queue: 0, Timeout: 5 * time.Minute})
	bad := dial(t, s)
	for i := 0; i < 10; i++ {
		bad.send("SLEEP 240000")
	}
	waitFor(t, reactortest.Hang, "the sleeps to hold every slot", func() bool {
		c, _ := s.limiterStats()
		return c.Holders == 10
	})
	other := dial(t, s)
	other.send("ECHO x")
	if got, _ := other.read(); !strings.HasPrefix(got, "-DefenseRejected") {
		t.Fatalf("with every slot held: %q, want -DefenseRejected", got)
	}
	_ = bad.c.SetLinger(0) // close sends RST
	_ = bad.c.Close()
	waitFor(t, reactortest.Hang, "the reset client's slots to come back (the sleeps had minutes to go)", func() bool {
		c, _ := s.limiterStats()
		return c.Holders == 0
	})
	waitFor(t, reactortest.Hang, "the 10 SLEEPs counted canceled", func() bool {
		return commandCounts(s)["SLEEP"].Canceled == 10
	})
	if sl := commandCounts(s)["SLEEP"]; sl.Started != 10 || sl.Succeeded+sl.Failed != 0 {
		t.Fatalf("SLEEP counts after the reset: %+v, want 10 started, 10 canceled", sl)
	}
	other.send("ECHO y")
	other.expect("y")
}

// A half-close (FIN) is not a reset: every request already sent is
// answered, then the server closes.
func TestHalfCloseStillAnswered(t *testing.T) {
	s := start(t, Config{})
	c := dial(t, s)
	c.send("SLEEP 50", "ECHO a", "SET hk v", "GET hk")
	if err := c.c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.expect("OK", "a", "OK", "v")
	c.expectEOF()
}

// Many clients that fill the server and reset, one after another, do not
// exhaust it.
func TestRepeatedResetsDoNotExhaust(t *testing.T) {
	s := start(t, Config{Concurrent: 20, Queue: 0, Timeout: 5 * time.Minute})
	for round := 0; round < 5; round++ {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, strings.Repeat("SLEEP 240000\n", 20)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, reactortest.Hang, "slots held", func() bool { cs, _ := s.limiterStats(); return cs.Holders == 20 })
		_ = c.(*net.TCPConn).SetLinger(0)
		_ = c.Close()
		waitFor(t, reactortest.Hang, "slots back (the sleeps had minutes to go)", func() bool { cs, _ := s.limiterStats(); return cs.Holders == 0 })
	}
	o := dial(t, s)
	o.send("ECHO alive")
	o.expect("alive")
}

// Queue means the Limiter's MaxQueue (0: no queue), and a
// rejection says it came from the limiter.
//
// The slot is held until the test lets it go (a reset of the holder's
// connection cancels its SLEEP: TestResetConnectionReturnsLimiterSlots),
// not for a time: a SLEEP of 300 ms that ended while the test's goroutine
// waited for the CPU (load 25 on 2 cores) let the queued request run and
// the "full" one in.
func TestQueueMeansLimiterMaxQueue(t *testing.T) {
	for _, q := range []int{0, 1} {
		s := start(t, Config{Concurrent: 1, Queue: q, Timeout: 5 * time.Minute})
		busy, waiting, other := dial(t, s), dial(t, s), dial(t, s)
		busy.send("SLEEP 240000")
		waitFor(t, 2*time.Second, "the slot taken", func() bool { c, _ := s.limiterStats(); return c.Holders == 1 })
		if q == 1 {
			waiting.send("ECHO queued")
			waitFor(t, 2*time.Second, "one queued", func() bool { c, _ := s.limiterStats(); return c.Queued == 1 })
		}
		other.send("ECHO x")
		got, err := other.read()
		if err != nil || got != "-DefenseRejected limiter: concurrency queue is full" {
			t.Fatalf("queue %d: reply %q, %v", q, got, err)
		}
		_ = busy.c.SetLinger(0) // close sends RST: the SLEEP is canceled, its slot freed
		_ = busy.c.Close()
		if q == 1 {
			waiting.expect("queued")
		}
		// The slot comes back (the queued request, if any, ran in it).
		waitFor(t, 2*time.Second, "the slot back", func() bool { c, _ := s.limiterStats(); return c.Holders == 0 && c.Queued == 0 })
		other.send("ECHO y")
		other.expect("y")
	}
}

// The server passes its connection limits to netio.
func TestConnectionLimits(t *testing.T) {
	s := start(t, Config{ReadTimeout: 100 * time.Millisecond, IdleTimeout: 6 * time.Second, MaxConns: 2})
	slow := dial(t, s)
	if _, err := io.WriteString(slow.c, "ECHO never ends"); err != nil {
		t.Fatal(err)
	}
	slow.expectEOF()
	a := dial(t, s)
	a.send("ECHO a")
	a.expect("a")
	waitFor(t, 2*time.Second, "one connection open", func() bool { return s.Conns() == 1 })
	b := dial(t, s)
	b.send("ECHO b")
	b.expect("b")
	c := dial(t, s) // the third: over MaxConns
	c.expectEOF()
	if s.ns.Refused() != 1 {
		t.Fatalf("refused %d, want 1 (open %d, accepted %d)", s.ns.Refused(), s.Conns(), s.ns.Accepted())
	}
}
