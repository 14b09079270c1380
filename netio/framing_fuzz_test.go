//go:build linux

package netio

import (
	"bytes"
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// frameHandler consumes complete lines; a line starting with 'P' pauses
// reading (the harness resumes it), one starting with 'H' consumes only
// itself and stops (the rest is kept and offered again).
type frameHandler struct {
	lines  [][]byte
	closed error
	ended  bool
}

func (h *frameHandler) OnOpen(*Conn) {}
func (h *frameHandler) OnData(c *Conn, data []byte) int {
	n := 0
	for {
		i := bytes.IndexByte(data[n:], '\n')
		if i < 0 {
			return n
		}
		line := data[n : n+i]
		h.lines = append(h.lines, append([]byte(nil), line...))
		n += i + 1
		if len(line) > 0 && line[0] == 'P' {
			c.PauseRead()
			return n
		}
		if len(line) > 0 && line[0] == 'H' {
			return n
		}
	}
}
func (h *frameHandler) OnEOF(*Conn) {}
func (h *frameHandler) OnClose(_ *Conn, err error) {
	h.ended = true
	h.closed = err
}

// FuzzFraming feeds data to a connection's input path in chunks whose
// sizes come from splits, with pauses, resumes and partial consumption,
// and checks against a model: the handler sees the complete lines of the
// input, in order, whatever the split, and consumed plus kept input is
// exactly what was fed; the connection is closed
// with ErrInputTooLarge exactly when the incomplete tail it keeps exceeds
// MaxInput after some chunk.
func FuzzFraming(f *testing.F) {
	f.Add([]byte("a\nbb\nccc\n"), []byte{1, 2, 3})
	f.Add([]byte("Pause\nafter\nHold\nx\ny"), []byte{0, 5, 1})
	f.Add(bytes.Repeat([]byte("z"), 40), []byte{7})
	f.Add([]byte("\n\n\nP\n\nH\n"), []byte{})
	// One real reactor for every input: pausing and resuming change the
	// poller's interest in a real descriptor (one end of a socketpair that
	// is never written to: the harness delivers the chunks itself).
	r := reactortest.Start(f, reactor.Options{CPU: -1})
	f.Fuzz(func(t *testing.T, data, splits []byte) {
		const maxInput = 32
		h := &frameHandler{}
		s := &Server{h: h, o: Options{MaxInput: maxInput}.withDefaults()}
		l := &loop{s: s, r: r}
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fds[1])
		c := &Conn{fd: fds[0], l: l}
		s.live.Add(1)
		runOnLoop(r, c, func() { l.openConn(c) })
		defer runOnLoop(r, c, func() { _ = c.Abort() })

		var wantLines [][]byte
		wantClosed := false
		fed := 0
		for si := 0; fed < len(data) && !c.Closed(); si++ {
			size := 1
			if len(splits) > 0 {
				size = int(splits[si%len(splits)])%17 + 1
			}
			size = min(size, len(data)-fed)
			for c.state&stPaused != 0 && !c.Closed() {
				runOnLoop(r, c, c.ResumeRead) // the redelivery runs before the next read, as on the loop
			}
			if c.Closed() {
				break
			}
			chunk := data[fed : fed+size]
			runOnLoop(r, c, func() { c.deliver(chunk) })
			fed += size
			prefix := data[:fed]
			tail := len(prefix) - (bytes.LastIndexByte(prefix, '\n') + 1)
			if tail > maxInput && !wantClosed {
				wantClosed = true
			}
			if wantClosed {
				break
			}
		}
		for c.state&stPaused != 0 && !c.Closed() {
			runOnLoop(r, c, c.ResumeRead)
		}
		// The model: every complete line of what was fed, unless the
		// connection closed for input too large, where the kept tail is
		// dropped (the lines before it were all offered).
		for _, line := range bytes.SplitAfter(data[:fed], []byte("\n")) {
			if len(line) > 0 && line[len(line)-1] == '\n' {
				wantLines = append(wantLines, line[:len(line)-1])
			}
		}
		if wantClosed != (h.ended && errors.Is(h.closed, ErrInputTooLarge)) {
			t.Fatalf("closed for input too large: %v (%v), model says %v", h.ended, h.closed, wantClosed)
		}
		// Lines come in order, unchanged; an 'H' line leaves the lines
		// after it in the same offer kept until more input comes, so
		// with one the handler may have seen only a prefix.
		if len(h.lines) > len(wantLines) || !bytes.Contains(data[:fed], []byte("H")) && len(h.lines) != len(wantLines) {
			t.Fatalf("%d lines, want %d", len(h.lines), len(wantLines))
		}
		for i := range h.lines {
			if !bytes.Equal(h.lines[i], wantLines[i]) {
				t.Fatalf("line %d %q, want %q", i, h.lines[i], wantLines[i])
			}
		}
		// Nothing lost or duplicated: what was consumed, then what is
		// kept, is exactly what was fed.
		if !h.ended {
			var got []byte
			for _, l := range h.lines {
				got = append(append(got, l...), '\n')
			}
			if c.input != nil {
				got = append(got, c.input.B...)
			}
			if !bytes.Equal(got, data[:fed]) {
				t.Fatalf("consumed+kept %q, fed %q", got, data[:fed])
			}
		}
	})
}

// runOnLoop runs fn on r's loop and waits for it, and for the redelivery
// it may have posted.
func runOnLoop(r *reactor.Reactor, c *Conn, fn func()) {
	done := make(chan bool)
	r.Immediate(func() { fn(); done <- c.state&stRedeliver != 0 })
	for <-done {
		r.Immediate(func() { done <- c.state&stRedeliver != 0 })
	}
}
