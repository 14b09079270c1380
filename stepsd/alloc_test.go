//go:build linux

package stepsd

import (
	"bufio"
	"fmt"
	"net"
	"testing"
)

// The request path allocates nothing once warm: parse, flow (with its
// timeout and Limiter), the key command under its stripe lock, reply, write. The
// count covers the whole process, client included, so the client reuses
// its buffers too.
//
// Inline commands run as request objects; framed ones (as Redis clients
// send them) as a direct run (flow.startDirect).
func TestRequestPathDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers on purpose")
	}
	for _, framed := range []bool{false, true} {
		t.Run(fmt.Sprint("framed=", framed), func(t *testing.T) { testRequestPathDoesNotAllocate(t, framed) })
	}
}

func testRequestPathDoesNotAllocate(t *testing.T, framed bool) {
	s := start(t, Config{Reactors: 2})
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	var batch []byte
	const depth = 48
	for i := 0; i < depth/3; i++ {
		if framed {
			k, v, h := fmt.Sprint("key", i), fmt.Sprint("value", i), fmt.Sprint("hello", i)
			batch = append(batch, resp("SET", k, v)+resp("GET", k)+resp("ECHO", h)...)
			continue
		}
		batch = fmt.Appendf(batch, "SET key%d value%d\nGET key%d\nECHO hello%d\n", i, i, i, i)
	}
	roundTrip := func() {
		if _, err := c.Write(batch); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < depth; i++ {
			if kind, err := skipReply(br); err != nil || kind == '-' {
				t.Fatalf("reply %c, %v", kind, err)
			}
		}
	}
	for i := 0; i < 500; i++ {
		roundTrip() // pools, maps, buffers and the Limiter's slabs warm up
	}
	if n := testing.AllocsPerRun(200, roundTrip); n != 0 {
		t.Errorf("%v allocations per round trip of %d requests, want 0", n, depth)
	}
}
