//go:build linux

package stepsd

import (
	"bufio"
	"fmt"
	"net"
	"testing"
)

// BenchmarkPipelined measures a request's cost end to end over loopback:
// one connection, batches of depth requests (SET, GET, ECHO over 100
// keys) written at once, every reply read and checked. ns/op is per
// request; allocs/op counts the server's and the client's.
func BenchmarkPipelined(b *testing.B) {
	for _, reactors := range []int{1, 2} {
		for _, depth := range []int{1, 64} {
			b.Run(fmt.Sprintf("reactors=%d/depth=%d", reactors, depth), func(b *testing.B) {
				benchPipelined(b, reactors, depth)
			})
		}
	}
}

func benchPipelined(b *testing.B, reactors, depth int) {
	var batch []byte
	for i := 0; i < depth; i++ {
		k := i % 100
		switch i % 3 {
		case 0:
			batch = fmt.Appendf(batch, "SET key%d value%d\n", k, k)
		case 1:
			batch = fmt.Appendf(batch, "GET key%d\n", k)
		default:
			batch = append(batch, "ECHO hello\n"...)
		}
	}
	if depth == 1 {
		batch = []byte("SET key0 value0\n") // SET only: one line
	}
	benchBatches(b, reactors, depth, batch, nil)
}

// benchBatches times b.N requests over one loopback connection to a server
// of reactors reactors: batch (depth requests) written at once, every reply
// read and checked, until b.N replies came. prime, where set, is one
// request sent and answered before (a key that batch's GET finds).
func benchBatches(b *testing.B, reactors, depth int, batch, prime []byte) {
	s, err := Start(Config{Addr: "127.0.0.1:0", Reactors: reactors})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(0)
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	if prime != nil {
		if _, err := c.Write(prime); err != nil {
			b.Fatal(err)
		}
		if _, err := skipReply(br); err != nil {
			b.Fatal(err)
		}
	}
	run := func(n int) {
		for done := 0; done < n; done += depth {
			if _, err := c.Write(batch); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < depth; i++ {
				kind, err := skipReply(br)
				if err != nil {
					b.Fatal(err)
				}
				if kind == '-' {
					b.Fatal("error reply")
				}
			}
		}
	}
	run(10 * depth) // warm the pools
	b.ReportAllocs()
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
}
