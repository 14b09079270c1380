//go:build linux

package netio

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asyncsteps/asyncsteps/internal/leakcheck"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A connection that is not being read (its handler paused
// it, or its input ended and it still owes replies) ends as soon as its
// peer resets, with the reset's error: the handler learns at once that
// nobody is left to answer, instead of when its work ends. The poller
// keeps watching such a connection for hang-up and errors.
func TestResetWhileNotReadingEndsTheConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		// stop leaves the connection unread: after the line "stop\n" the
		// handler pauses, or the client half-closes and the handler does
		// not close (it still owes replies).
		halfClose bool
		want      error // Linux reports a reset after the peer's FIN as EPIPE
	}{
		{"paused by the handler", false, unix.ECONNRESET},
		{"after end of input", true, unix.EPIPE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newEcho()
			h.conns = make(chan *Conn, 1)
			h.onLine = func(c *Conn, line []byte) bool {
				if string(line) == "stop\n" {
					c.PauseRead()
					return false
				}
				_, _ = c.Write(line)
				return true
			}
			h.onEOF = func(*Conn) {} // replies still owed: stays open
			s, _ := serve(t, h, Options{})
			c := dial(t, s)
			sc := h.nextConn(t)
			echoCheck(t, c, "hello\n")
			if tc.halfClose {
				_ = c.CloseWrite()
				leakcheck.Until(t, "OnEOF", func() bool { return h.eofs.Load() == 1 })
			} else {
				write(t, c, "stop\nmore input, unread\n")
				leakcheck.Until(t, "the pause", func() (ok bool) {
					reactortest.OnLoop(t, sc.Reactor(), func() { ok = sc.state&stPaused != 0 })
					return ok
				})
			}
			// The server no longer asks the poller for read...
			reactortest.OnLoop(t, sc.Reactor(), func() {
				if sc.in != reactor.InterestHangup {
					t.Errorf("interest %b, want hang-up alone", sc.in)
				}
			})
			_ = c.SetLinger(0)
			began := time.Now()
			_ = c.Close() // RST
			recs := h.waitClosed(t, 1)
			checkErrs(t, recs, tc.want)
			t.Logf("OnClose %v after the reset", time.Since(began))
		})
	}
}
