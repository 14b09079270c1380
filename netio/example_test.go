//go:build linux

package netio_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/netio"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// lineFlows answers each line with a flow that replies 10ms later: the
// handler returns at once and the flow writes when its step runs. A
// connection closes once the peer has sent everything (OnEOF) and every
// reply it is owed is written: a client that sends its requests and
// half-closes gets all its answers.
type lineFlows struct{}

// lineConn is one connection's state, kept as its Context. Loop-owned.
type lineConn struct {
	inflight int  // flows started and not yet answered
	eof      bool // no more lines will come
}

func (lineFlows) OnOpen(c *netio.Conn) { c.SetContext(&lineConn{}) }

func (lineFlows) OnData(c *netio.Conn, data []byte) int {
	lc := c.Context().(*lineConn)
	n := 0
	for {
		i := bytes.IndexByte(data[n:], '\n')
		if i < 0 {
			return n
		}
		line := string(data[n : n+i]) // data is only valid during the call
		n += i + 1
		lc.inflight++
		root := engine.New(c.Reactor())
		root.Add(func(as *engine.Steps) {
			ext := as.External()
			c.Reactor().Deferred(10*time.Millisecond, func() { ext.Success() })
		}).Add(func(as *engine.Steps) {
			_, _ = c.WriteString("echo: " + line + "\n")
			lc.inflight--
			if lc.eof && lc.inflight == 0 {
				_ = c.Close() // the last reply owed: Close writes it first
			}
		})
		root.Execute()
		root.ReleaseAtEnd() // fire and forget: the root is recycled when its flow ends
	}
}

// OnEOF closes only once every reply is written; until then the flows
// still running answer, and the last one closes.
func (lineFlows) OnEOF(c *netio.Conn) {
	lc := c.Context().(*lineConn)
	lc.eof = true
	if lc.inflight == 0 {
		_ = c.Close()
	}
}

func (lineFlows) OnClose(c *netio.Conn, _ error) {}

func ExampleListen() {
	g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
	if err != nil {
		panic(err)
	}
	g.Start()
	defer g.Close()
	s, err := netio.Listen(g, "127.0.0.1:0", lineFlows{}, netio.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(time.Second)

	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fmt.Fprint(c, "hello\nworld\n")
	_ = c.(*net.TCPConn).CloseWrite() // sent everything: the server still answers
	out, _ := io.ReadAll(c)
	fmt.Print(string(out))
	// Output:
	// echo: hello
	// echo: world
}

// The example's handler answers everything it read
// before it closes, however the peer half-closes.
func TestExampleAnswersEverythingAfterHalfClose(t *testing.T) {
	g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()
	s, err := netio.Listen(g, "127.0.0.1:0", lineFlows{}, netio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(time.Second)
	for round := 0; round < 5; round++ {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		w := bufio.NewWriter(c)
		for i := 0; i < 100; i++ {
			fmt.Fprintf(w, "line %d.%d\n", round, i)
			fmt.Fprintf(&want, "echo: line %d.%d\n", round, i)
		}
		_ = w.Flush()
		_ = c.(*net.TCPConn).CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		// The replies may come in any order (each flow has its own 10ms).
		if g, w := sortedLines(string(got)), sortedLines(want.String()); g != w {
			t.Fatalf("round %d: %d reply bytes, want %d", round, len(got), want.Len())
		}
	}
}

func sortedLines(s string) string {
	l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := 1; i < len(l); i++ {
		for j := i; j > 0 && l[j] < l[j-1]; j-- {
			l[j], l[j-1] = l[j-1], l[j]
		}
	}
	return strings.Join(l, "\n")
}
