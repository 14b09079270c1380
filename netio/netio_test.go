//go:build linux

package netio

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// testHandler is a line handler whose behaviour each test tunes: by default
// it echoes every complete line.
type testHandler struct {
	onLine  func(c *Conn, line []byte) // nil: echo
	onEOF   func(c *Conn)              // nil: Close
	opened  atomic.Int32
	closed  atomic.Int32
	errMu   sync.Mutex
	errs    []error
	consume bool // consume input at all (false: keep everything)
}

func newEcho() *testHandler { return &testHandler{consume: true} }

func (h *testHandler) OnOpen(c *Conn) { h.opened.Add(1) }

func (h *testHandler) OnData(c *Conn, data []byte) int {
	if !h.consume {
		return 0
	}
	n := 0
	for {
		i := bytes.IndexByte(data[n:], '\n')
		if i < 0 || c.Closed() {
			return n
		}
		line := data[n : n+i+1]
		n += i + 1
		if h.onLine != nil {
			h.onLine(c, line)
		} else {
			_, _ = c.Write(line)
		}
	}
}

func (h *testHandler) OnEOF(c *Conn) {
	if h.onEOF != nil {
		h.onEOF(c)
		return
	}
	_ = c.Close()
}

func (h *testHandler) OnClose(c *Conn, err error) {
	h.errMu.Lock()
	h.errs = append(h.errs, err)
	h.errMu.Unlock()
	h.closed.Add(1)
}

func (h *testHandler) closeErrs() []error {
	h.errMu.Lock()
	defer h.errMu.Unlock()
	return append([]error(nil), h.errs...)
}

// serve starts a 2-reactor group and a server on a loopback port; cleanup
// shuts both down and checks that no descriptor or goroutine leaked.
func serve(t *testing.T, h Handler, o Options) (*Server, *reactor.Group) {
	t.Helper()
	fds, gs := countFDs(t), runtime.NumGoroutine()
	g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	s, err := Listen(g, "127.0.0.1:0", h, o)
	if err != nil {
		_ = g.Close()
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
		waitFor(t, "descriptors and goroutines released", func() bool {
			return countFDs(t) <= fds && runtime.NumGoroutine() <= gs
		})
	})
	return s, g
}

func countFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func dial(t *testing.T, s *Server) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

func TestEchoManyConnsSpreadOverReactors(t *testing.T) {
	h := newEcho()
	var mu sync.Mutex
	seen := map[*reactor.Reactor]int{}
	h.onLine = func(c *Conn, line []byte) {
		if c.Reactor().IsSameThread() {
			mu.Lock()
			seen[c.Reactor()]++
			mu.Unlock()
		}
		_, _ = c.Write(line)
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
