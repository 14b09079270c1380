//go:build linux

package netio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asyncsteps/asyncsteps/internal/leakcheck"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// testHandler is a line handler whose behaviour each test tunes: by default
// it echoes every complete line and closes at end of input. It records
// every connection's lines and end, for the test to check once closed.
type testHandler struct {
	onOpen  func(c *Conn)                          // after the bookkeeping; may panic
	onData  func(c *Conn, data []byte) int         // set: replaces the line splitting
	onLine  func(c *Conn, line []byte) (more bool) // nil: echo; false: stop, keep the rest
	onEOF   func(c *Conn)                          // nil: Close
	conns   chan *Conn                             // non-nil: OnOpen sends each connection
	opened  atomic.Int32
	closed  atomic.Int32
	eofs    atomic.Int32
	lines   atomic.Int64 // lines consumed, all connections
	mu      sync.Mutex
	closes  []closeRec
	openSet map[*Conn]bool
	ends    map[*Conn]int // OnClose calls per connection
}

// connState is a connection's record, kept as its Context. Loop-owned
// until OnClose; the test reads it from closeRec afterwards.
type connState struct {
	lines   []string // consumed, in order
	eofAt   int      // len(lines) when OnEOF came; -1: not yet
	closeAt time.Time
	endAt   time.Time // OnClose
}

type closeRec struct {
	err error
	st  *connState
}

func newEcho() *testHandler { return &testHandler{} }

func (h *testHandler) OnOpen(c *Conn) {
	c.SetContext(&connState{eofAt: -1})
	h.mu.Lock()
	if h.openSet == nil {
		h.openSet = map[*Conn]bool{}
	}
	h.openSet[c] = true
	h.mu.Unlock()
	h.opened.Add(1)
	if h.conns != nil {
		h.conns <- c
	}
	if h.onOpen != nil {
		h.onOpen(c)
	}
}

func (h *testHandler) OnData(c *Conn, data []byte) int {
	if h.onData != nil {
		return h.onData(c, data)
	}
	st := c.Context().(*connState)
	n := 0
	for !c.Closed() {
		i := bytes.IndexByte(data[n:], '\n')
		if i < 0 {
			break
		}
		line := data[n : n+i+1]
		n += i + 1
		st.lines = append(st.lines, string(line))
		h.lines.Add(1)
		if h.onLine == nil {
			_, _ = c.Write(line)
		} else if !h.onLine(c, line) {
			break
		}
	}
	return n
}

func (h *testHandler) OnEOF(c *Conn) {
	st := c.Context().(*connState)
	st.eofAt = len(st.lines)
	h.eofs.Add(1)
	if h.onEOF != nil {
		h.onEOF(c)
		return
	}
	_ = c.Close()
}

func (h *testHandler) OnClose(c *Conn, err error) {
	st, _ := c.Context().(*connState)
	if st != nil {
		st.endAt = time.Now()
	}
	h.mu.Lock()
	h.closes = append(h.closes, closeRec{err, st})
	if h.ends == nil {
		h.ends = map[*Conn]int{}
	}
	h.ends[c]++
	h.mu.Unlock()
	h.closed.Add(1)
}

func (h *testHandler) records() []closeRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]closeRec(nil), h.closes...)
}

// waitClosed waits for n OnClose calls and returns their records.
func (h *testHandler) waitClosed(t *testing.T, n int) []closeRec {
	t.Helper()
	leakcheck.Until(t, fmt.Sprintf("%d connections closed", n), func() bool { return int(h.closed.Load()) >= n })
	recs := h.records()
	if len(recs) != n {
		t.Fatalf("%d connections closed, want %d", len(recs), n)
	}
	return recs
}

// nextConn returns the next connection the handler opened.
func (h *testHandler) nextConn(t *testing.T) *Conn {
	t.Helper()
	select {
	case c := <-h.conns:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for OnOpen")
		return nil
	}
}

// newGroup starts a 2-reactor group, closed at cleanup.
func newGroup(t *testing.T) *reactor.Group {
	t.Helper()
	g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	return g
}

// serve starts a 2-reactor group and a server on a loopback port; cleanup
// shuts both down and checks that no descriptor or goroutine leaked.
func serve(t *testing.T, h Handler, o Options) (*Server, *reactor.Group) {
	t.Helper()
	leakcheck.Check(t)
	g := newGroup(t)
	s, err := Listen(g, "127.0.0.1:0", h, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Shutdown(time.Second)
		if err := g.Close(); err != nil {
			t.Error(err)
		}
		if s.Conns() != 0 {
			t.Errorf("%d connections still counted open", s.Conns())
		}
	})
	return s, g
}

func dial(t *testing.T, s *Server) *net.TCPConn {
	t.Helper()
	return dialWith(t, s, &net.Dialer{})
}

func dialWith(t *testing.T, s *Server, d *net.Dialer) *net.TCPConn {
	t.Helper()
	c, err := d.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

// smallBufDialer dials with small socket buffers, set before the handshake
// so that the window is small from the start.
func smallBufDialer(size int) *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) { err = setBufs(int(fd), size) }); cerr != nil {
			return cerr
		}
		return err
	}}
}

func setBufs(fd, size int) error {
	if err := setSndBuf(fd, size); err != nil {
		return err
	}
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, size)
}

// setSndBuf shrinks a socket's send buffer, so that output queues in the
// Conn sooner. (Not the receive buffer of a connected socket: shrinking it
// below the window already advertised makes the kernel drop segments, and
// the peer's retransmissions back off for seconds.)
func setSndBuf(fd, size int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, size)
}

// readAll reads until end of stream, which must come within 5s.
func readAll(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v (after %q)", err, b)
	}
	return string(b)
}

// readN reads exactly n bytes within 5s.
func readN(t *testing.T, c net.Conn, n int) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

// expectEnd reads until the server ends the stream (EOF or reset); it
// must not time out.
func expectEnd(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server did not end the connection")
	}
}

// expectRefused checks that s takes no more connections: a dial fails, or
// the connection ends at once.
func expectRefused(t *testing.T, s *Server) {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		return
	}
	defer c.Close()
	if c.LocalAddr().String() == c.RemoteAddr().String() {
		return // TCP connected the dialer to itself: nobody listens
	}
	expectEnd(t, c)
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := c.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

// echoCheck sends a line and expects it back.
func echoCheck(t *testing.T, c net.Conn, line string) {
	t.Helper()
	write(t, c, line)
	if got := readN(t, c, len(line)); got != line {
		t.Fatalf("echo: got %q, want %q", got, line)
	}
}

func checkErrs(t *testing.T, recs []closeRec, want error) {
	t.Helper()
	for _, r := range recs {
		if !errors.Is(r.err, want) {
			t.Errorf("OnClose error %v, want %v", r.err, want)
		}
	}
}

func numbered(prefix string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s%d\n", prefix, i)
	}
	return b.String()
}

func TestEchoManyConnsSpreadOverReactors(t *testing.T) {
	h := newEcho()
	var mu sync.Mutex
	seen := map[*reactor.Reactor]int{}
	h.onLine = func(c *Conn, line []byte) bool {
		if c.Reactor().IsSameThread() {
			mu.Lock()
			seen[c.Reactor()]++
			mu.Unlock()
		}
		_, _ = c.Write(line)
		return true
	}
	s, g := serve(t, h, Options{})
	const conns, lines = 16, 200
	var wg sync.WaitGroup
	errc := make(chan error, conns)
	for i := 0; i < conns; i++ {
		c := dial(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Pipelined: write everything, then read it back in order.
			var out bytes.Buffer
			for j := 0; j < lines; j++ {
				fmt.Fprintf(&out, "conn %d line %d %s\n", i, j, strings.Repeat("x", j))
			}
			want := out.String()
			go func() { _, _ = c.Write(out.Bytes()) }()
			got := make([]byte, len(want))
			if _, err := io.ReadFull(c, got); err != nil {
				errc <- err
				return
			}
			if string(got) != want {
				errc <- fmt.Errorf("conn %d: echo differs", i)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	rs := g.Reactors()
	mu.Lock()
	defer mu.Unlock()
	if seen[rs[0]] == 0 || seen[rs[1]] == 0 || len(seen) != 2 {
		t.Errorf("lines not handled on both reactors' loops: %d and %d", seen[rs[0]], seen[rs[1]])
	}
	if s.Accepted() != conns {
		t.Errorf("Accepted = %d, want %d", s.Accepted(), conns)
	}
}

// The peer's FIN comes to OnEOF after every line before it was consumed;
// the connection stays writable; a partial last line is dropped.
func TestHalfCloseEOFAfterInput(t *testing.T) {
	for _, tc := range []struct {
		name, send string
		lines      int
	}{
		{"lines", numbered("line ", 2000), 2000},
		{"partial line before FIN", "a\nb\npartial", 2},
		{"FIN only", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newEcho()
			h.onEOF = func(c *Conn) {
				_, _ = c.WriteString("bye\n")
				_ = c.Close()
			}
			s, _ := serve(t, h, Options{})
			c := dial(t, s)
			write(t, c, tc.send)
			if err := c.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			want := tc.send[:strings.LastIndexByte(tc.send, '\n')+1] + "bye\n"
			if got := readAll(t, c); got != want {
				t.Fatalf("got %d bytes %.40q..., want %d bytes %.40q...", len(got), got, len(want), want)
			}
			recs := h.waitClosed(t, 1)
			checkErrs(t, recs, nil)
			st := recs[0].st
			if st.eofAt != tc.lines || len(st.lines) != tc.lines {
				t.Errorf("OnEOF after %d lines, %d lines in all; want %d", st.eofAt, len(st.lines), tc.lines)
			}
			if h.eofs.Load() != 1 {
				t.Errorf("OnEOF called %d times", h.eofs.Load())
			}
		})
	}
}

// A peer that writes and never reads: queued output stays near HighWater
// and reading stops, until the peer reads; then everything completes.
func TestSlowReaderBackpressure(t *testing.T) {
	const (
		lineLen   = 16 << 10 // = ReadSize: at most one line per OnData
		replyLen  = 64 << 10
		highWater = 64 << 10
		nLines    = 256
	)
	h := newEcho()
	h.conns = make(chan *Conn, 1)
	h.onOpen = func(c *Conn) { _ = setSndBuf(c.fd, 16<<10) }
	var maxBuf atomic.Int64
	reply := make([]byte, replyLen)
	h.onLine = func(c *Conn, line []byte) bool {
		copy(reply, line[:8]) // the line's number
		if _, err := c.Write(reply); err != nil {
			panic(err)
		}
		if b := int64(c.Buffered()); b > maxBuf.Load() {
			maxBuf.Store(b)
		}
		return true
	}
	s, _ := serve(t, h, Options{HighWater: highWater, ReadSize: lineLen})
	c := dialWith(t, s, smallBufDialer(16<<10))
	sc := h.nextConn(t)

	wrote := make(chan error, 1)
	go func() {
		line := make([]byte, lineLen)
		for i := range line {
			line[i] = 'y'
		}
		line[lineLen-1] = '\n'
		for i := 0; i < nLines; i++ {
			copy(line, fmt.Sprintf("%08d", i))
			if _, err := c.Write(line); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()

	// stalled reports whether the server stopped reading, with its socket
	// full, and consumed no line since the last look.
	last := int64(-1)
	stalled := func() (ok bool) {
		reactortest.OnLoop(t, sc.Reactor(), func() {
			ok = sc.state&(stOutFull|stWBlocked) == stOutFull|stWBlocked && sc.in&reactor.InterestRead == 0
		})
		n := h.lines.Load()
		ok = ok && n == last && n < nLines
		last = n
		return ok
	}
	// The kernel's buffers fill a little after the server stops reading
	// the first time: wait for three quiet looks in a row.
	quiet := 0
	leakcheck.Until(t, "the server stops reading", func() bool {
		time.Sleep(10 * time.Millisecond)
		if stalled() {
			quiet++
		} else {
			quiet = 0
		}
		return quiet == 3
	})
	n := h.lines.Load()
	time.Sleep(100 * time.Millisecond) // observation window: nothing may be read
	if !stalled() {
		t.Fatalf("the server read on: %d lines consumed, then %d", n, h.lines.Load())
	}
	if m := maxBuf.Load(); m >= highWater+replyLen {
		t.Fatalf("queued output reached %d bytes, want < HighWater+one reply = %d", m, highWater+replyLen)
	}
	t.Logf("stalled after %d of %d lines, max queued %d", n, nLines, maxBuf.Load())

	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, replyLen)
	for i := 0; i < nLines; i++ {
		if _, err := io.ReadFull(c, buf); err != nil {
			reactortest.OnLoop(t, sc.Reactor(), func() {
				outq, _ := unix.IoctlGetInt(sc.fd, unix.SIOCOUTQ)
				inq, _ := unix.IoctlGetInt(sc.fd, unix.SIOCINQ)
				kept := -1
				if sc.input != nil {
					kept = len(sc.input.B)
				}
				t.Logf("server when the replies stopped: state %b in %b buffered %d kept %d lines %d outq %d inq %d", sc.state, sc.in, sc.Buffered(), kept, h.lines.Load(), outq, inq)
			})
			t.Fatalf("reply %d: %v", i, err)
		}
		if got, want := string(buf[:8]), fmt.Sprintf("%08d", i); got != want {
			t.Fatalf("reply %d is for line %s", i, got)
		}
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if got := h.lines.Load(); got != nLines {
		t.Errorf("server consumed %d lines, want %d", got, nLines)
	}
	if m := maxBuf.Load(); m >= highWater+replyLen {
		t.Errorf("queued output reached %d bytes, want < %d", m, highWater+replyLen)
	}
	_ = c.CloseWrite()
	expectEnd(t, c)
	checkErrs(t, h.waitClosed(t, 1), nil)
}

var errBoom = errors.New("boom")

// A panic in a handler callback aborts its connection only.
func TestHandlerPanicAbortsOneConn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		where string // "open", "data", "eof"
		value any
	}{
		{"OnOpen", "open", "open boom"},
		{"OnData", "data", "data boom"},
		{"OnData error value", "data", errBoom},
		{"OnEOF", "eof", "eof boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newEcho()
			var armed atomic.Bool
			h.onOpen = func(c *Conn) {
				if tc.where == "open" && armed.Load() {
					panic(tc.value)
				}
			}
			h.onLine = func(c *Conn, line []byte) bool {
				if tc.where == "data" && string(line) == "panic\n" {
					panic(tc.value)
				}
				_, _ = c.Write(line)
				return true
			}
			h.onEOF = func(c *Conn) {
				if tc.where == "eof" {
					panic(tc.value)
				}
				_ = c.Close()
			}
			s, _ := serve(t, h, Options{})
			good := dial(t, s)
			echoCheck(t, good, "before\n")

			armed.Store(true)
			bad := dial(t, s)
			switch tc.where {
			case "data":
				write(t, bad, "ok\npanic\nnever\n")
			case "eof":
				_ = bad.CloseWrite()
			}
			expectEnd(t, bad)
			recs := h.waitClosed(t, 1)
			var pe *PanicError
			if !errors.As(recs[0].err, &pe) || pe.Value != tc.value {
				t.Fatalf("OnClose error %v, want a *PanicError of %v", recs[0].err, tc.value)
			}
			if err, ok := tc.value.(error); ok && !errors.Is(recs[0].err, err) {
				t.Errorf("PanicError does not unwrap to %v", err)
			}
			if tc.where == "data" {
				if got := recs[0].st.lines; len(got) != 2 || got[1] != "panic\n" {
					t.Errorf("lines consumed before the panic: %q", got)
				}
			}
			echoCheck(t, good, "after\n") // the loop and the other connection go on
			if s.Conns() != 1 {
				t.Errorf("Conns = %d, want 1", s.Conns())
			}
		})
	}
}

// Unconsumed input over MaxInput closes the connection; up to it does not.
func TestMaxInput(t *testing.T) {
	const max = 4096
	for _, tc := range []struct {
		name   string
		send   int
		closed bool
	}{
		{"at MaxInput", max, false},
		{"over MaxInput", max + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newEcho()
			h.conns = make(chan *Conn, 1)
			var kept atomic.Int64
			h.onData = func(c *Conn, data []byte) int {
				kept.Store(int64(len(data)))
				return 0
			}
			s, _ := serve(t, h, Options{MaxInput: max})
			c := dial(t, s)
			sc := h.nextConn(t)
			write(t, c, strings.Repeat("z", tc.send))
			if tc.closed {
				expectEnd(t, c)
				checkErrs(t, h.waitClosed(t, 1), ErrInputTooLarge)
				return
			}
			leakcheck.Until(t, "all input offered", func() bool { return kept.Load() == int64(tc.send) })
			var closed bool
			reactortest.OnLoop(t, sc.Reactor(), func() { closed = sc.Closed() }) // after the read's checks
			if closed || h.closed.Load() != 0 {
				t.Fatalf("closed with %d bytes kept, MaxInput %d", tc.send, max)
			}
		})
	}
}

// OnData returning a count out of range closes with ErrBadConsume.
func TestBadConsume(t *testing.T) {
	for _, tc := range []struct {
		name string
		ret  func(n int) int
	}{
		{"negative", func(int) int { return -1 }},
		{"over len", func(n int) int { return n + 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newEcho()
			h.onData = func(c *Conn, data []byte) int { return tc.ret(len(data)) }
			s, _ := serve(t, h, Options{})
			c := dial(t, s)
			write(t, c, "hello\n")
			expectEnd(t, c)
			checkErrs(t, h.waitClosed(t, 1), ErrBadConsume)
		})
	}
}

// tcpState returns the kernel's TCP state of fd (unix.BPF_TCP_*).
func tcpState(fd int) uint8 {
	info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return 0
	}
	return info.State
}

// PauseRead keeps the input; ResumeRead from a timer offers it again before
// newer bytes, in order, and OnEOF comes after it.
func TestPauseResume(t *testing.T) {
	for _, tc := range []struct {
		name      string
		later     string // sent while paused
		halfClose bool
		// lateResume: the timer that resumes gets past a tick boundary
		// first, so the redelivery is due at a later tick than the timer
		// and the poller reports the socket first.
		lateResume bool
	}{
		{"open", "l3\nl4\n", false, false},
		{"half-closed meanwhile", "l3\nl4\n", true, false},
		{"half-closed meanwhile, late resume", "l3\nl4\n", true, true},
		{"only FIN meanwhile", "", true, false},
		{"only FIN meanwhile, late resume", "", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newEcho()
			h.conns = make(chan *Conn, 1)
			h.onLine = func(c *Conn, line []byte) bool {
				_, _ = c.Write(line)
				if string(line) == "l0\n" {
					c.PauseRead()
					return false
				}
				return true
			}
			h.onEOF = func(c *Conn) {
				_, _ = c.WriteString("bye\n")
				_ = c.Close()
			}
			s, _ := serve(t, h, Options{})
			c := dial(t, s)
			sc := h.nextConn(t)
			first, later := "l0\nl1\nl2\n", tc.later
			write(t, c, first)
			if got := readN(t, c, 3); got != "l0\n" {
				t.Fatalf("got %q", got)
			}
			var kept int
			reactortest.OnLoop(t, sc.Reactor(), func() {
				if sc.input != nil {
					kept = len(sc.input.B)
				}
			})
			if kept != len(first)-3 {
				t.Fatalf("%d bytes kept at the pause, want %d", kept, len(first)-3)
			}
			write(t, c, later)
			if tc.halfClose {
				_ = c.CloseWrite()
			}
			// The new bytes (and FIN) are in the server's socket before it
			// resumes: the kept input must still come first.
			leakcheck.Until(t, "new input at the server", func() (ok bool) {
				reactortest.OnLoop(t, sc.Reactor(), func() {
					n, err := unix.IoctlGetInt(sc.fd, unix.SIOCINQ)
					ok = err == nil && n == len(later) &&
						(!tc.halfClose || tcpState(sc.fd) == unix.BPF_TCP_CLOSE_WAIT)
				})
				return ok
			})
			var linesWhilePaused atomic.Int64
			sc.Reactor().Deferred(10*time.Millisecond, func() {
				linesWhilePaused.Store(h.lines.Load())
				if tc.lateResume {
					time.Sleep(2 * sc.Reactor().Tick())
				}
				sc.ResumeRead()
			})
			want := "l1\nl2\n" + later
			if tc.halfClose {
				if got := readAll(t, c); got != want+"bye\n" {
					t.Fatalf("got %q, want %q", got, want+"bye\n")
				}
			} else {
				if got := readN(t, c, len(want)); got != want {
					t.Fatalf("got %q, want %q", got, want)
				}
				_ = c.CloseWrite()
				if got := readAll(t, c); got != "bye\n" {
					t.Fatalf("got %q after FIN", got)
				}
			}
			if n := linesWhilePaused.Load(); n != 1 {
				t.Errorf("%d lines consumed while paused, want 1", n)
			}
			recs := h.waitClosed(t, 1)
			checkErrs(t, recs, nil)
			if st := recs[0].st; st.eofAt != len(st.lines) || strings.Join(st.lines, "") != "l0\n"+want {
				t.Errorf("lines %q, OnEOF after %d", st.lines, st.eofAt)
			}
		})
	}
}

// PauseRead and ResumeRead within one OnData: the input the call leaves
// unconsumed is offered again without waiting for more bytes.
func TestPauseResumeInOnData(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sends []string // each read by the server before the next is sent
	}{
		{"input in one read", []string{"l0\nl1\nl2\n"}},
		{"input behind a kept partial line", []string{"l", "0\nl1\nl2\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newEcho()
			h.conns = make(chan *Conn, 1)
			h.onLine = func(c *Conn, line []byte) bool {
				_, _ = c.Write(line)
				c.PauseRead()  // as at a limit of work in flight...
				c.ResumeRead() // ...which ends at once
				return false
			}
			s, _ := serve(t, h, Options{})
			c := dial(t, s)
			sc := h.nextConn(t)
			for i, p := range tc.sends {
				write(t, c, p)
				if i < len(tc.sends)-1 {
					leakcheck.Until(t, "the partial line kept", func() (ok bool) {
						reactortest.OnLoop(t, sc.Reactor(), func() { ok = sc.input != nil && len(sc.input.B) == len(p) })
						return ok
					})
				}
			}
			if got := readN(t, c, 9); got != "l0\nl1\nl2\n" {
				t.Fatalf("got %q", got)
			}
		})
	}
}

// A handler that pauses after every line and resumes from a timer sees
// every line in order, then OnEOF.
func TestPauseEveryLine(t *testing.T) {
	const n = 60
	h := newEcho()
	h.onLine = func(c *Conn, line []byte) bool {
		_, _ = c.Write(line)
		c.PauseRead()
		c.Reactor().Deferred(time.Millisecond, c.ResumeRead)
		return false
	}
	s, _ := serve(t, h, Options{})
	c := dial(t, s)
	send := numbered("line ", n)
	write(t, c, send)
	_ = c.CloseWrite()
	if got := readAll(t, c); got != send {
		t.Fatalf("got %q, want %q", got, send)
	}
	recs := h.waitClosed(t, 1)
	checkErrs(t, recs, nil)
	if st := recs[0].st; st.eofAt != n {
		t.Errorf("OnEOF after %d lines, want %d", st.eofAt, n)
	}
}

// Close flushes queued output, waiting at most Linger.
func TestCloseLinger(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int
		read    bool
		linger  time.Duration
		wantErr error
	}{
		{"drains", 1 << 20, true, 2 * time.Second, nil},
		{"peer never reads", 8 << 20, false, 100 * time.Millisecond, ErrLinger},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newEcho()
			h.onOpen = func(c *Conn) { _ = setSndBuf(c.fd, 16<<10) }
			out := bytes.Repeat([]byte("0123456789abcde\n"), tc.size/16)
			h.onLine = func(c *Conn, line []byte) bool {
				_, _ = c.Write(out)
				c.Context().(*connState).closeAt = time.Now()
				_ = c.Close()
				if _, err := c.Write(line); !errors.Is(err, ErrClosed) {
					panic(fmt.Sprintf("Write after Close: %v", err))
				}
				return false
			}
			s, _ := serve(t, h, Options{Linger: tc.linger})
			c := dialWith(t, s, smallBufDialer(16<<10))
			write(t, c, "go\n")
			if tc.read {
				if got := readAll(t, c); got != string(out) {
					t.Fatalf("received %d bytes, want %d", len(got), len(out))
				}
			}
			recs := h.waitClosed(t, 1)
			checkErrs(t, recs, tc.wantErr)
			if d := recs[0].st.endAt.Sub(recs[0].st.closeAt); tc.wantErr != nil && d < tc.linger {
				t.Errorf("aborted %v after Close, before Linger %v", d, tc.linger)
			}
			if !tc.read {
				expectEnd(t, c)
			}
		})
	}
}

// Shutdown ends input (OnEOF), waits for the handlers to close, aborts the
// rest after grace, and accepts no more connections.
func TestShutdown(t *testing.T) {
	const conns = 4
	for _, tc := range []struct {
		name     string
		close    bool
		grace    time.Duration
		wantErr  error
		min, max time.Duration // Shutdown's duration
	}{
		{"handler closes at once", true, 5 * time.Second, nil, 0, 2 * time.Second},
		{"handler never closes", false, 200 * time.Millisecond, ErrShutdown, 200 * time.Millisecond, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newEcho()
			h.onEOF = func(c *Conn) {
				if tc.close {
					_, _ = c.WriteString("bye\n")
					_ = c.Close()
				}
			}
			s, _ := serve(t, h, Options{})
			var cs []*net.TCPConn
			for i := 0; i < conns; i++ {
				c := dial(t, s)
				echoCheck(t, c, "hi\n")
				cs = append(cs, c)
			}
			start := time.Now()
			if err := s.Shutdown(tc.grace); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d < tc.min || d > tc.max {
				t.Errorf("Shutdown took %v, want %v to %v", d, tc.min, tc.max)
			}
			if s.Conns() != 0 {
				t.Errorf("Conns = %d after Shutdown", s.Conns())
			}
			checkErrs(t, h.waitClosed(t, conns), tc.wantErr)
			if h.eofs.Load() != conns {
				t.Errorf("OnEOF called %d times, want %d", h.eofs.Load(), conns)
			}
			for _, c := range cs {
				if tc.close {
					if got := readAll(t, c); got != "bye\n" {
						t.Errorf("got %q", got)
					}
				} else {
					expectEnd(t, c)
				}
			}
			expectRefused(t, s)
			if s.Accepted() != conns || h.opened.Load() != conns {
				t.Errorf("accepted %d, opened %d after Shutdown, want %d", s.Accepted(), h.opened.Load(), conns)
			}
		})
	}
}

// Shutdown does not report end of input to a connection its handler
// already closed: Close's flush goes on within Linger.
func TestShutdownWhileClosing(t *testing.T) {
	const linger = 100 * time.Millisecond
	h := newEcho()
	h.onOpen = func(c *Conn) { _ = setSndBuf(c.fd, 16<<10) }
	h.conns = make(chan *Conn, 1)
	out := make([]byte, 8<<20)
	h.onLine = func(c *Conn, line []byte) bool {
		_, _ = c.Write(out)
		_ = c.Close()
		return false
	}
	s, _ := serve(t, h, Options{Linger: linger})
	c := dialWith(t, s, smallBufDialer(16<<10))
	sc := h.nextConn(t)
	write(t, c, "go\n") // and never read
	leakcheck.Until(t, "Close with output queued", func() (ok bool) {
		reactortest.OnLoop(t, sc.Reactor(), func() { ok = sc.state&stClosing != 0 && sc.Buffered() > 0 })
		return ok
	})
	if err := s.Shutdown(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	checkErrs(t, h.waitClosed(t, 1), ErrLinger)
	if n := h.eofs.Load(); n != 0 {
		t.Errorf("OnEOF called %d times after Close", n)
	}
	expectEnd(t, c)
}

// Closing the group without Shutdown closes every connection and the
// listener.
func TestGroupCloseClosesConns(t *testing.T) {
	const conns = 6
	h := newEcho()
	s, g := serve(t, h, Options{})
	var cs []*net.TCPConn
	for i := 0; i < conns; i++ {
		c := dial(t, s)
		echoCheck(t, c, "hi\n")
		cs = append(cs, c)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	checkErrs(t, h.waitClosed(t, conns), reactor.ErrClosed)
	if h.eofs.Load() != 0 {
		t.Errorf("OnEOF called %d times", h.eofs.Load())
	}
	if s.Conns() != 0 {
		t.Errorf("Conns = %d", s.Conns())
	}
	for _, c := range cs {
		expectEnd(t, c)
	}
	expectRefused(t, s)
}

// Conn methods off the loop fail with ErrWrongThread (or do nothing); after
// Close, writing fails with ErrClosed.
func TestConnMethodsOffLoopAndAfterClose(t *testing.T) {
	h := newEcho()
	h.conns = make(chan *Conn, 1)
	s, _ := serve(t, h, Options{})
	c := dial(t, s)
	sc := h.nextConn(t)

	for name, f := range map[string]func() error{
		"Write":       func() error { _, err := sc.Write([]byte("x")); return err },
		"WriteString": func() error { _, err := sc.WriteString("x"); return err },
		"CloseWrite":  sc.CloseWrite,
		"Close":       sc.Close,
		"Abort":       sc.Abort,
	} {
		if err := f(); !errors.Is(err, ErrWrongThread) {
			t.Errorf("%s off the loop: %v, want ErrWrongThread", name, err)
		}
	}
	sc.PauseRead() // ignored off the loop: the echo below goes on
	echoCheck(t, c, "still echoing\n")

	reactortest.OnLoop(t, sc.Reactor(), func() {
		if err := sc.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if _, err := sc.Write([]byte("x")); !errors.Is(err, ErrClosed) {
			t.Errorf("Write after Close: %v", err)
		}
		if err := sc.CloseWrite(); !errors.Is(err, ErrClosed) {
			t.Errorf("CloseWrite after Close: %v", err)
		}
		if err := sc.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if err := sc.Abort(); err != nil {
			t.Errorf("Abort after Close: %v", err)
		}
		if !sc.Closed() {
			t.Error("not Closed after Close with nothing queued")
		}
	})
	expectEnd(t, c)
	checkErrs(t, h.waitClosed(t, 1), nil)
	if _, err := sc.Write([]byte("x")); !errors.Is(err, ErrWrongThread) {
		t.Errorf("Write off the loop after OnClose: %v", err)
	}
	reactortest.OnLoop(t, sc.Reactor(), func() { // a flow answering after the peer left
		if _, err := sc.WriteString("late"); !errors.Is(err, ErrClosed) {
			t.Errorf("Write after OnClose: %v", err)
		}
	})
}

// CloseWrite ends the server's output once the replies are out; input goes
// on until the peer's FIN.
func TestCloseWrite(t *testing.T) {
	h := newEcho()
	var lateWrite atomic.Value
	h.onLine = func(c *Conn, line []byte) bool {
		switch string(line) {
		case "bye\n":
			_, _ = c.WriteString("reply\n")
			if err := c.CloseWrite(); err != nil {
				panic(err)
			}
		case "more\n":
			_, err := c.Write(line)
			lateWrite.Store(fmt.Sprint(err))
		default:
			_, _ = c.Write(line)
		}
		return true
	}
	s, _ := serve(t, h, Options{})
	c := dial(t, s)
	write(t, c, "a\nb\nbye\n")
	if got := readAll(t, c); got != "a\nb\nreply\n" {
		t.Fatalf("got %q", got)
	}
	write(t, c, "more\n")
	leakcheck.Until(t, "the server reads after CloseWrite", func() bool { return lateWrite.Load() != nil })
	if got := lateWrite.Load(); got != ErrClosed.Error() {
		t.Errorf("Write after CloseWrite: %v, want ErrClosed", got)
	}
	if h.closed.Load() != 0 {
		t.Fatal("closed before the peer's FIN")
	}
	_ = c.CloseWrite()
	recs := h.waitClosed(t, 1)
	checkErrs(t, recs, nil)
	if st := recs[0].st; st.eofAt != 4 {
		t.Errorf("OnEOF after %d lines, want 4", st.eofAt)
	}
}

// Many connections come and go at once, some reset by the peer while data
// flows both ways: each opened connection is closed exactly once.
func TestManyConnsChurn(t *testing.T) {
	const conns = 200
	h := newEcho()
	s, _ := serve(t, h, Options{})
	var wg sync.WaitGroup
	errc := make(chan error, conns)
	var modes [4]atomic.Int32
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 7))
			c, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				errc <- err
				return
			}
			tc := c.(*net.TCPConn)
			defer tc.Close()
			_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
			send := numbered(fmt.Sprintf("c%d-", i), 1+r.IntN(200))
			mode := r.IntN(4)
			modes[mode].Add(1)
			switch mode {
			case 0: // reset at once
				_ = tc.SetLinger(0)
			case 1: // reset while the echo flows
				_, _ = tc.Write([]byte(send))
				_, _ = io.ReadFull(tc, make([]byte, r.IntN(len(send))))
				_ = tc.SetLinger(0)
			case 2: // reset right after writing
				_, _ = tc.Write([]byte(send))
				_ = tc.SetLinger(0)
			case 3: // the whole echo, then an orderly close
				go func() { _, _ = tc.Write([]byte(send)); _ = tc.CloseWrite() }()
				got, err := io.ReadAll(tc)
				if err != nil || string(got) != send {
					errc <- fmt.Errorf("conn %d: echo: %v, %d of %d bytes", i, err, len(got), len(send))
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	leakcheck.Until(t, "every connection closed", func() bool {
		return s.Conns() == 0 && int(h.closed.Load()) == int(h.opened.Load())
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if uint64(len(h.openSet)) != s.Accepted() || len(h.ends) != len(h.openSet) {
		t.Errorf("accepted %d, opened %d, closed %d", s.Accepted(), len(h.openSet), len(h.ends))
	}
	for c, n := range h.ends {
		if n != 1 || !h.openSet[c] {
			t.Errorf("a connection got %d OnClose calls (opened: %v)", n, h.openSet[c])
		}
	}
	t.Logf("accepted %d; modes %d %d %d %d", s.Accepted(), modes[0].Load(), modes[1].Load(), modes[2].Load(), modes[3].Load())
}

func TestListenErrors(t *testing.T) {
	leakcheck.Check(t)
	g := newGroup(t)
	taken, err := Listen(g, "127.0.0.1:0", newEcho(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	closed, err := reactor.NewGroup(1, reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	_ = closed.Close()

	for _, tc := range []struct {
		name string
		g    *reactor.Group
		addr string
		h    Handler
		want error // nil: any error
	}{
		{"no port", g, "127.0.0.1", newEcho(), nil},
		{"bad port", g, "127.0.0.1:99999", newEcho(), nil},
		{"address not local", g, "192.0.2.1:0", newEcho(), syscall.EADDRNOTAVAIL},
		{"port in use", g, taken.Addr().String(), newEcho(), syscall.EADDRINUSE},
		{"nil handler", g, "127.0.0.1:0", nil, nil},
		{"nil group", nil, "127.0.0.1:0", newEcho(), nil},
		{"closed group", closed, "127.0.0.1:0", newEcho(), reactor.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fds := leakcheck.FDs(t)
			s, err := Listen(tc.g, tc.addr, tc.h, Options{})
			if err == nil {
				_ = s.Close()
				t.Fatal("Listen succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if n := leakcheck.FDs(t); n != fds {
				t.Errorf("%d descriptors open, %d before", n, fds)
			}
		})
	}
	// The failures left the group and the server that holds the port alone.
	c := dial(t, taken)
	echoCheck(t, c, "still here\n")
}

// An OnEOF that closes other connections of its loop during Shutdown does
// not stop the others from getting theirs (found in review: the drain
// walked a list its handlers changed).
func TestShutdownOnEOFClosesOthers(t *testing.T) {
	const conns = 6
	h := newEcho()
	h.conns = make(chan *Conn, conns)
	var all []*Conn
	h.onEOF = func(c *Conn) {
		for _, o := range all {
			if o != c && o.Reactor() == c.Reactor() {
				_ = o.Abort()
			}
		}
		_ = c.Close()
	}
	s, g := serve(t, h, Options{})
	for i := 0; i < conns; i++ {
		c := dial(t, s)
		echoCheck(t, c, "hi\n")
		all = append(all, h.nextConn(t))
	}
	_ = g
	start := time.Now()
	if err := s.Shutdown(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Shutdown took %v: connections waited for the grace period", d)
	}
	h.waitClosed(t, conns)
}

// Shutdown after one of the group's reactors shut down (taking its
// connections with it) still drains the others and returns (found in
// review: it waited forever), and the server's shutdown hooks are gone
// from the reactors still running.
func TestShutdownAfterAReactorClosed(t *testing.T) {
	h := newEcho()
	s, g := serve(t, h, Options{})
	for i := 0; i < 4; i++ {
		c := dial(t, s)
		echoCheck(t, c, "hi\n")
	}
	_ = g.Reactors()[1].Close()
	done := make(chan struct{})
	go func() {
		_ = s.Shutdown(time.Second)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown hangs after a reactor of the group closed")
	}
	if s.Conns() != 0 {
		t.Errorf("Conns = %d after Shutdown", s.Conns())
	}
	h.waitClosed(t, 4)
}

// Close during a long Shutdown aborts at once instead of waiting for the
// Shutdown's grace (found in review).
func TestCloseDuringShutdown(t *testing.T) {
	h := newEcho()
	h.onEOF = func(c *Conn) {} // never closes: only an abort ends it
	s, _ := serve(t, h, Options{})
	c := dial(t, s)
	echoCheck(t, c, "hi\n")
	long := make(chan struct{})
	go func() {
		_ = s.Shutdown(time.Hour)
		close(long)
	}()
	leakcheck.Until(t, "OnEOF from the Shutdown", func() bool { return h.eofs.Load() == 1 })
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v during a Shutdown with an hour of grace", d)
	}
	<-long // the long Shutdown returns too: nothing is left
	checkErrs(t, h.waitClosed(t, 1), ErrShutdown)
}
