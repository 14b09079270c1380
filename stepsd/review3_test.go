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
