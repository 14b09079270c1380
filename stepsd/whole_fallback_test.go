//go:build linux

package stepsd

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/netio"
)

// runWhole's branches that no client can reach on demand
// (profiles/notes/2026-11-27-review-srv-round9.md): the flow queued
// behind another ready flow, and the general end (afterRun) for a run
// that did not answer every request. Each test calls the handler's OnData
// itself, on the loop, with the state the branch needs, on a real
// connection, whose client reads what it sent.

// recorder is stepsd's handler with the connections it opens handed to
// the test.
type recorder struct {
	*handler
	opened chan *netio.Conn
}

func (h recorder) OnOpen(c *netio.Conn) {
	h.handler.OnOpen(c)
	h.opened <- c
}

// openConn opens a connection to s through a listener of its own (stepsd's
// handler, on s's reactors) and returns its client side and the server's
// netio.Conn.
func openConn(t *testing.T, s *Server) (*client, *netio.Conn) {
	t.Helper()
	h := recorder{(*handler)(s), make(chan *netio.Conn, 1)}
	ln, err := netio.Listen(s.g, "127.0.0.1:0", h, netio.Options{ReadSize: 64 << 10, MaxInput: s.cfg.MaxRequest + 64<<10})
	if err != nil {
		t.Fatal(err)
	}
	// Registered before start's Shutdown: cleanups run last first.
	t.Cleanup(func() { _ = ln.Shutdown(time.Second) })
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &client{t: t, c: nc.(*net.TCPConn), br: bufio.NewReader(nc)}, <-h.opened
}

// onLoop runs fn on sh's loop and waits for it.
func onLoop(sh *shard, fn func()) {
	done := make(chan struct{})
	sh.r.Immediate(func() { fn(); close(done) })
	<-done
}

// A whole read whose Execute finds a flow ready ahead (a flow another
// connection's read left queued in the same batch of I/O callbacks, one a
// timer or the Limiter readied): Execute queues it, runWhole runs both
// with RunReady, the one ahead first, and answers the read as at once.
func TestWholeReadQueuedBehindAReadyFlow(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	sh := s.shards[0]
	c, nc := openConn(t, s)
	data := resp("SET", "qk", "v") + resp("GET", "qk") + resp("ECHO", "e") + resp("PING")
	var order []string
	var n, queued int
	onLoop(sh, func() {
		ahead := engine.New(sh.r)
		engine.X.DeferStart(ahead, true) // queued by its Execute, as a flow readied earlier in the batch
		ahead.Add(func(*engine.Steps) { order = append(order, "ahead") })
		ahead.Execute()
		was := sh.wholeQueued
		n = (*handler)(s).OnData(nc, []byte(data))
		queued = sh.wholeQueued - was
		order = append(order, "returned")
		if ahead.Executing() {
			order = append(order, "ahead still executing")
		}
		ahead.Release()
	})
	if n != len(data) || queued != 1 {
		t.Fatalf("OnData took %d of %d bytes, %d whole reads queued; want all, 1", n, len(data), queued)
	}
	if strings.Join(order, ",") != "ahead,returned" {
		t.Fatalf("order %q, want the flow ahead run by runWhole's RunReady", order)
	}
	c.expect("OK", "v", "e", "PONG")
	// The same connection goes on as usual.
	c.sendRaw(resp("GET", "qk") + resp("ECHO", "f"))
	c.expect("v", "f")
	if m := s.Metrics(context.Background()); m.Concurrency.Holders != 0 {
		t.Errorf("concurrency %+v after the reads, want no holder", m.Concurrency)
	}
	if k, flag := slotsClean(t, sh); k != 0 || flag {
		t.Errorf("%d dirty slots, reqsDirty %v after the reads", k, flag)
	}
	checkNoStrays(t, s)
}

// A whole read whose run step the engine's turn budget (4,096 steps) cut
// short twice (Execute's first turn, then runWhole's RunReady): only a
// store that panics at more than 4,096 requests of one read (each panic
// costs two steps: directError's loop runs the rest in an iteration and
// the iteration's step) and a MaxPipeline above that get there. runWhole's
// general end (afterRun, sendDirect) must then neither hang nor answer
// from slots the read no longer owns: the requests it did not answer are
// counted read and never answered (a stray), the connection is closed (its
// replies can no longer come in order), and everything else is as after
// any read: no lock held, the Limiter empty once the cut run's last step
// ran, the slots clean, other clients served.
func TestWholeReadCutByTheTurnBudget(t *testing.T) {
	const n = 5000 // > 4,096 panics: two turns' budget, two steps a panic
	s := start(t, Config{Reactors: 1, MaxPipeline: 2 * n})
	sh := s.shards[0]
	c, nc := openConn(t, s)
	// Every SET of key panics: its stripe has no map (a new key's insert
	// panics, TestStorePanicReleasesStripe).
	key := "cut"
	st := s.keys.stripeOf([]byte(key))
	st.mu.Lock()
	m := st.m
	st.m = nil
	st.mu.Unlock()
	data := strings.Repeat(resp("SET", key, "v"), n)
	var took, strays int
	onLoop(sh, func() {
		took = (*handler)(s).OnData(nc, []byte(data))
		strays = sh.strays
	})
	if took != len(data) {
		t.Fatalf("OnData took %d of %d bytes", took, len(data))
	}
	if strays != 1 {
		t.Errorf("%d strays counted, want 1 (the cut run)", strays)
	}
	c.expectEOF()
	waitFor(t, 10*time.Second, "the cut run's last step to leave the Limiter", func() bool {
		cs, _ := s.limiterStats()
		return cs.Holders == 0
	})
	if !st.mu.TryLock() {
		t.Fatal("the panicking SETs' stripe is still locked")
	}
	st.m = m
	st.mu.Unlock()
	if k, flag := slotsClean(t, sh); k != 0 || flag {
		t.Errorf("%d dirty slots, reqsDirty %v after the read", k, flag)
	}
	o := dial(t, s)
	o.sendRaw(resp("SET", key, "w") + resp("GET", key) + resp("ECHO", "alive"))
	o.expect("OK", "w", "alive")
	for _, x := range s.Metrics(context.Background()).Commands[0] {
		if x.Command == "SET" && (x.Started != n+1 || x.Failed < 4096 || x.Failed >= n || x.Succeeded != 1) {
			t.Errorf("SET %+v, want %d started (read), 4,096 or more failed but not all, 1 succeeded", x, n+1)
		}
	}
}
