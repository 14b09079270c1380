//go:build linux

package netio_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/netio"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// lineFlows answers each line with a flow that replies 10ms later: the
// handler returns at once and the flow writes when its step runs.
type lineFlows struct{}

func (lineFlows) OnOpen(*netio.Conn) {}

func (lineFlows) OnData(c *netio.Conn, data []byte) int {
	n := 0
	for {
		i := bytes.IndexByte(data[n:], '\n')
		if i < 0 {
			return n
		}
		line := string(data[n : n+i]) // data is only valid during the call
		n += i + 1
		root := engine.New(c.Reactor())
		root.Add(func(as *engine.Steps) {
			ext := as.External()
			c.Reactor().Deferred(10*time.Millisecond, func() { ext.Success() })
		}).Add(func(as *engine.Steps) {
			_, _ = c.WriteString("echo: " + line + "\n")
		})
		root.Execute()
	}
}

func (lineFlows) OnEOF(c *netio.Conn)            { _ = c.Close() }
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
	br := bufio.NewReader(c)
	for i := 0; i < 2; i++ {
		line, _ := br.ReadString('\n')
		fmt.Print(line)
	}
	// Output:
	// echo: hello
	// echo: world
}
