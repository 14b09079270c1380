//go:build linux

package netio

import (
	"bytes"
	"fmt"
	"testing"
)

// TestSendOrderAndBackpressure mixes Send with Write on a connection whose
// peer reads only once everything is sent: Send writes at once while the
// socket takes it, queues behind queued output, and keeps the rest when
// the socket is full; the peer must read every byte, in order.
func TestSendOrderAndBackpressure(t *testing.T) {
	const (
		nLines  = 64
		bodyLen = 64 << 10
	)
	h := newEcho()
	h.onOpen = func(c *Conn) { _ = setSndBuf(c.fd, 16<<10) }
	body := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, bodyLen) }
	h.onLine = func(c *Conn, line []byte) bool {
		var i int
		if _, err := fmt.Sscanf(string(line), "%d", &i); err != nil {
			panic(err)
		}
		if i%2 == 1 { // behind queued output
			if _, err := c.Write([]byte(fmt.Sprintf("H%d\n", i))); err != nil {
				panic(err)
			}
		}
		if n, err := c.Send(body(i)); n != bodyLen || err != nil {
			panic(fmt.Sprintf("Send: %d, %v", n, err))
		}
		return true
	}
	s, _ := serve(t, h, Options{HighWater: 1 << 30})
	c := dialWith(t, s, smallBufDialer(16<<10))
	var want bytes.Buffer
	for i := 0; i < nLines; i++ {
		write(t, c, fmt.Sprintf("%d\n", i))
		if i%2 == 1 {
			fmt.Fprintf(&want, "H%d\n", i)
		}
		want.Write(body(i))
	}
	got := readN(t, c, want.Len())
	if got != want.String() {
		i := 0
		for i < len(got) && got[i] == want.String()[i] {
			i++
		}
		t.Fatalf("output differs from byte %d of %d", i, want.Len())
	}
	_ = c.CloseWrite()
	expectEnd(t, c)
}

// TestSendAfterClose: Send fails as Write does once the connection closes.
func TestSendAfterClose(t *testing.T) {
	h := newEcho()
	errs := make(chan error, 1)
	h.onLine = func(c *Conn, _ []byte) bool {
		_ = c.Close()
		_, err := c.Send([]byte("x"))
		errs <- err
		return false
	}
	s, _ := serve(t, h, Options{})
	c := dial(t, s)
	write(t, c, "a\n")
	if err := <-errs; err != ErrClosed {
		t.Fatalf("Send after Close: %v, want ErrClosed", err)
	}
}
