//go:build linux

package stepsd

import (
	"strings"
	"testing"
)

// A refused request of a read's head that the direct run does not take
// (every one of them refused, or the Limiter full) is started as a request
// object after the whole head was parsed: its reply still names its own
// command, not the last one parsed (Request.Args is the parser's, reused by
// each parse).
func TestDirectHeadRefusedKeepsItsName(t *testing.T) {
	t.Run("all refused", func(t *testing.T) {
		s := start(t, Config{Reactors: 1})
		c := dial(t, s)
		c.sendRaw(resp("FOO") + resp("BAR", "x"))
		for _, w := range []string{"-ERR unknown command 'FOO'", "-ERR unknown command 'BAR'"} {
			if got, err := c.read(); err != nil || !strings.HasPrefix(got, w) {
				t.Fatalf("reply %q, %v; want %q", got, err, w)
			}
		}
		checkNoStrays(t, s)
	})
	t.Run("limiter full", func(t *testing.T) {
		s := start(t, Config{Concurrent: 1, Queue: 4, Reactors: 1})
		busy, c := dial(t, s), dial(t, s)
		busy.send("SLEEP 100")
		waitHolders(t, s, 1)
		c.sendRaw(resp("FOO") + resp("ECHO", "e") + resp("BAR"))
		for _, w := range []string{"-ERR unknown command 'FOO'", "e", "-ERR unknown command 'BAR'"} {
			if got, err := c.read(); err != nil || !strings.HasPrefix(got, w) {
				t.Fatalf("reply %q, %v; want %q", got, err, w)
			}
		}
		busy.expect("OK")
		checkNoStrays(t, s)
	})
}

// A client that goes away while a direct run's replies are over a chunk:
// the run's replies are queued, never written, inside its step, so a
// failed write cannot end the connection (OnClose, netio giving the read's
// bytes back) while the run and the requests after it still read their
// words from those bytes. OnClose counts one that comes while its
// connection's read is being run (shard.strays).
func TestDirectRunPeerGoneMidReplies(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	c := dial(t, s)
	v := strings.Repeat("v", 100<<10)
	c.sendRaw(resp("SET", "big", v))
	c.expect("OK")
	var b strings.Builder
	for i := 0; i < 16; i++ {
		b.WriteString(resp("GET", "big"))
		b.WriteString(resp("SET", "k", "after"))
	}
	b.WriteString("GET k\r\n") // a request object after the run
	for round := 0; round < 20; round++ {
		g := dial(t, s)
		g.sendRaw(b.String())
		_ = g.c.Close() // the server's writes meet a closed socket: RST, then EPIPE
		other := dial(t, s)
		other.sendRaw(resp("ECHO", "alive"))
		other.expect("alive")
		_ = other.c.Close()
	}
	checkNoStrays(t, s)
}

// The shard's scratch of parsed requests (a direct head's) keeps no
// reference to a read's bytes once OnData returns, as a recycled request
// keeps none (shard.recycle): a stale slot would keep a netio input buffer,
// up to MaxRequest, alive until a head as long overwrote it.
func TestDirectScratchKeepsNoReadBytes(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	c := dial(t, s)
	c.sendRaw(resp("SET", "k", "v") + resp("GET", "k") + resp("BOGUS", "x") + resp("DEL", "k") + resp("ECHO", "e") + "PING\r\n" + resp("ECHO", "f"))
	c.expect("OK", "v")
	if got, _ := c.read(); !strings.HasPrefix(got, "-ERR unknown command 'BOGUS'") {
		t.Fatalf("reply %q, want -ERR unknown command 'BOGUS'", got)
	}
	c.expect(":1", "e", "PONG", "f")
	sh := s.shards[0]
	ch := make(chan int, 1)
	sh.r.Immediate(func() {
		n := 0
		for i := range sh.reqs {
			p := &sh.reqs[i]
			if p.Key != nil || p.Value != nil || p.Text != nil || p.Args != nil {
				n++
			}
		}
		ch <- n
	})
	if n := <-ch; n != 0 {
		t.Fatalf("%d slots of the shard's parsed requests still hold a read's bytes", n)
	}
}

// The requests behind one that waits go on in flows of their own (split),
// each meeting the Limiter as itself, in order: a later one's run must not
// take the slot an earlier one of the read was about to enter. Concurrent 2,
// no queue: the first SLEEP holds a slot, the second takes the other, and
// the ECHO after them is refused, as with a section per request (base
// 82b7ef4); the run of a split flow took the slot at its start, ahead of
// the second SLEEP's section, which was refused instead.
func TestSplitFlowsEnterInOrder(t *testing.T) { forms(t, testSplitFlowsEnterInOrder) }

func testSplitFlowsEnterInOrder(t *testing.T, framed bool) {
	s := start(t, Config{Concurrent: 2, Reactors: 1})
	c := dial(t, s)
	c.sendAs(framed, "SLEEP 30", "SLEEP 30", "ECHO y")
	for _, w := range []string{"OK", "OK", "-DefenseRejected"} {
		if got, err := c.read(); err != nil || !strings.HasPrefix(got, w) {
			t.Fatalf("reply %q, %v; want %q", got, err, w)
		}
	}
	checkNoStrays(t, s)
}
