//go:build linux

package netio_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/asyncsteps/asyncsteps/netio"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// upperBatch answers every complete line of a read at once: it gathers the
// replies in a scratch buffer of its own and hands the batch to Send, one
// write(2) with no copy into the connection's queue.
type upperBatch struct{ out []byte } // one per server: loop-owned with one reactor

func (*upperBatch) OnOpen(*netio.Conn) {}

func (h *upperBatch) OnData(c *netio.Conn, data []byte) int {
	n := 0
	h.out = h.out[:0]
	for {
		i := bytes.IndexByte(data[n:], '\n')
		if i < 0 {
			break
		}
		h.out = append(h.out, bytes.ToUpper(data[n:n+i+1])...)
		n += i + 1
	}
	if len(h.out) > 0 {
		_, _ = c.Send(h.out) // h.out is free for reuse as soon as Send returns
	}
	return n
}

func (*upperBatch) OnEOF(c *netio.Conn)        { _ = c.Close() }
func (*upperBatch) OnClose(*netio.Conn, error) {}

func ExampleConn_Send() {
	g, err := reactor.NewGroup(1, reactor.Options{CPU: -1})
	if err != nil {
		panic(err)
	}
	g.Start()
	defer g.Close()
	s, err := netio.Listen(g, "127.0.0.1:0", &upperBatch{}, netio.Options{})
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
	_ = c.(*net.TCPConn).CloseWrite()
	out, _ := io.ReadAll(c)
	fmt.Print(string(out))
	// Output:
	// HELLO
	// WORLD
}
