//go:build linux

package netio

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// BenchmarkEchoRoundTrip is one line's round trip through a netio echo
// server over loopback: the reactor, poller and netio's share of a
// request's latency, without any engine work.
func BenchmarkEchoRoundTrip(b *testing.B) {
	g, err := reactor.NewGroup(1, reactor.Options{CPU: -1})
	if err != nil {
		b.Fatal(err)
	}
	g.Start()
	defer g.Close()
	s, err := Listen(g, "127.0.0.1:0", newEcho(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(time.Second)
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	line := []byte("ping\n")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(line); err != nil {
			b.Fatal(err)
		}
		if _, err := br.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
}
