//go:build linux

package netio

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Time limits (zero: off) and a maximum number of
// connections.
func TestIdleTimeout(t *testing.T) {
	h := newEcho()
	// The period is long beside the client's 20ms pace, so that a client
	// goroutine stalled by a loaded machine (the test failed once under
	// load 20, at 250ms, at base too) is not taken for an idle one.
	const period = time.Second
	s, _ := serve(t, h, Options{IdleTimeout: period})
	idle, busy := dial(t, s), dial(t, s)
	echoCheck(t, idle, "hello\n")
	began := time.Now()
	// busy keeps talking for 1.5 idle periods: it stays open.
	for time.Since(began) < period*3/2 {
		echoCheck(t, busy, "tick\n")
		time.Sleep(20 * time.Millisecond) // the client's pace, not a synchronisation
	}
	expectEnd(t, idle)
	if d := time.Since(began); d > 6*period {
		t.Fatalf("idle connection closed after %v", d)
	}
	echoCheck(t, busy, "still here\n")
	recs := h.waitClosed(t, 1)
	checkErrs(t, recs, ErrIdleTimeout)
}

func TestReadTimeoutStopsSlowloris(t *testing.T) {
	h := newEcho()
	s, _ := serve(t, h, Options{ReadTimeout: 150 * time.Millisecond})
	c := dial(t, s)
	began := time.Now()
	done, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		// One byte of an endless line every 20ms (the client's pace):
		// never idle, never complete, until the server closes it or the
		// test stops. Only ReadTimeout can end it: a timeout that each
		// byte restarted would never fire, and waitClosed would fail.
		for {
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	recs := h.waitClosed(t, 1)
	close(stop)
	checkErrs(t, recs, ErrReadTimeout)
	if d := time.Since(began); d < 150*time.Millisecond {
		t.Fatalf("closed after %v, before its ReadTimeout of 150ms", d)
	}
	<-done
	// Complete lines, however slow, are not an incomplete message.
	d := dial(t, s)
	for i := 0; i < 4; i++ {
		echoCheck(t, d, "line\n")
		time.Sleep(60 * time.Millisecond)
	}
}

func TestWriteTimeoutClosesNonReader(t *testing.T) {
	h := newEcho()
	big := strings.Repeat("y", 1<<20)
	h.onOpen = func(c *Conn) { _ = setSndBuf(c.fd, 4096) }
	h.onLine = func(c *Conn, line []byte) bool {
		_, _ = c.WriteString(big) // the client never reads it
		return true
	}
	s, _ := serve(t, h, Options{WriteTimeout: 150 * time.Millisecond, HighWater: 4 << 20})
	c := dialWith(t, s, smallBufDialer(4096))
	write(t, c, "give\n")
	recs := h.waitClosed(t, 1)
	checkErrs(t, recs, ErrWriteTimeout)
}

func TestZeroLimitsAreOff(t *testing.T) {
	h := newEcho()
	s, _ := serve(t, h, Options{})
	c := dial(t, s)
	write(t, c, "partial")
	time.Sleep(300 * time.Millisecond) // nothing may close it meanwhile
	write(t, c, " line\n")
	if got := readN(t, c, len("partial line\n")); got != "partial line\n" {
		t.Fatalf("got %q", got)
	}
	if n := h.closed.Load(); n != 0 {
		t.Fatalf("%d connections closed with no limit set", n)
	}
}

func TestMaxConns(t *testing.T) {
	h := newEcho()
	logs := make(chan string, 16)
	s, _ := serve(t, h, Options{MaxConns: 2, Logf: func(f string, a ...any) {
		logs <- fmt.Sprintf(f, a...)
	}})
	a, b := dial(t, s), dial(t, s)
	echoCheck(t, a, "a\n")
	echoCheck(t, b, "b\n")
	const over = 20
	for i := 0; i < over; i++ {
		c := dial(t, s)
		expectEnd(t, c)
	}
	if n := s.Refused(); n != over {
		t.Fatalf("Refused %d, want %d", n, over)
	}
	if st := s.Stats(); st.Refused != over || st.Accepted != 2 || st.Open != 2 {
		t.Fatalf("Stats %+v, want %d refused, 2 accepted and open", st, over)
	}
	// The log says how many were refused, not only the
	// first: one line at once, then, a second later, one with the true
	// count of those that came meanwhile.
	next := func() string {
		t.Helper()
		select {
		case line := <-logs:
			return line
		case <-time.After(5 * time.Second):
			t.Fatal("no log line")
			return ""
		}
	}
	if line := next(); !strings.Contains(line, "refusing new ones; 1 refused so far") {
		t.Fatalf("first line %q", line)
	}
	began := time.Now()
	line := next()
	if want := fmt.Sprintf("%d connections refused in the last 1s (Options.MaxConns 2); %d refused so far", over-1, over); !strings.Contains(line, want) {
		t.Fatalf("second line %q, want %q", line, want)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("the count came %v after the first line, want about 1s", d)
	}
	echoCheck(t, a, "a still served\n")
	_ = b.Close()
	h.waitClosed(t, 1)
	c := dial(t, s) // a slot is free again
	echoCheck(t, c, "c\n")
	select {
	case line := <-logs:
		t.Errorf("logged %q with no refusal since the last line", line)
	case <-time.After(1200 * time.Millisecond): // a second with no refusal: the log is quiet
	}
}

func TestNegativeLimitsRefused(t *testing.T) {
	g := newGroup(t)
	for _, o := range []Options{{IdleTimeout: -1}, {ReadTimeout: -1}, {WriteTimeout: -1}, {MaxConns: -1}} {
		if s, err := Listen(g, "127.0.0.1:0", newEcho(), o); err == nil {
			_ = s.Close()
			t.Errorf("Listen accepted %+v", o)
		}
	}
}

// A listener that cannot be polled again after an accept pause (its
// SetInterest fails) is reported and retried, not left silent: the server
// would otherwise never accept again.
func TestResumeAcceptFailureIsLoggedAndRetried(t *testing.T) {
	h := newEcho()
	logged := make(chan string, 16)
	s, _ := serve(t, h, Options{Logf: func(f string, a ...any) {
		select {
		case logged <- fmt.Sprintf(f, a...):
		default:
		}
	}})
	// Take the listener out of the poller, as a failed epoll_ctl leaves
	// it, and resume: SetInterest fails on an unwatched descriptor.
	reactortest.OnLoop(t, s.acc.r, func() {
		if err := s.acc.r.Unwatch(s.lfd); err != nil {
			t.Errorf("Unwatch: %v", err)
		}
		resumeAccept(s, 0)
	})
	select {
	case line := <-logged:
		if !strings.Contains(line, "resume accepting") {
			t.Fatalf("logged %q, want the resume failure", line)
		}
	case <-time.After(reactortest.Hang):
		t.Fatal("the failed resume was not logged")
	}
	// The retry runs again after fdLimitPause: once the listener is
	// watched again (with no interest, as a pause leaves it) it succeeds
	// and the server accepts.
	reactortest.OnLoop(t, s.acc.r, func() {
		if err := reactor.WatchTo(s.acc.r, s.lfd, 0, onAcceptable, s); err != nil {
			t.Errorf("WatchTo: %v", err)
		}
	})
	c := dial(t, s)
	echoCheck(t, c, "accepting again\n")
}
