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
