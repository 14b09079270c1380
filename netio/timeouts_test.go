//go:build linux

package netio

import (
	"io"
	"strings"
	"testing"
	"time"
)

// Issue 23 item 3: WriteTimeout is "no progress for that long", not "all
// output written within it": a peer that reads steadily, however much
// slower than the server writes, keeps its connection; one that stops
// reading is cut WriteTimeout after its output stopped moving.
func TestWriteTimeoutIsNoProgress(t *testing.T) {
	const (
		timeout = 300 * time.Millisecond
		size    = 512 << 10 // at the steady reader's pace: 1.3s, over 4 timeouts
		chunk   = 4 << 10
		pace    = 10 * time.Millisecond
	)
	for _, tc := range []struct {
		name  string
		reads int // chunks the client reads before it stops; -1: all
		cut   bool
	}{
		{"steady slow reader", -1, false},
		{"reader that stops", 32, true},
		{"never reads", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newEcho()
			big := strings.Repeat("y", size)
			h.onOpen = func(c *Conn) { _ = setSndBuf(c.fd, 4096) }
			h.onLine = func(c *Conn, _ []byte) bool {
				_, _ = c.WriteString(big)
				return true
			}
			h.onEOF = func(c *Conn) { _ = c.Close() }
			s, _ := serve(t, h, Options{WriteTimeout: timeout, HighWater: 4 << 20})
			c := dialWith(t, s, smallBufDialer(4096))
			write(t, c, "give\n")
			began := time.Now()
			buf := make([]byte, chunk)
			got, lastRead := 0, began
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
			for i := 0; tc.reads < 0 || i < tc.reads; i++ {
				n, err := io.ReadFull(c, buf)
				got += n
				if err != nil {
					if tc.cut {
						t.Fatalf("connection ended after %d bytes while reading: %v", got, err)
					}
					t.Fatalf("steady reader cut after %d of %d bytes, %v: %v", got, size, time.Since(began), err)
				}
				lastRead = time.Now()
				if got == size {
					break
				}
				time.Sleep(pace) // the reader's pace, not a synchronisation
			}
			if !tc.cut {
				if got != size {
					t.Fatalf("read %d of %d bytes", got, size)
				}
				_ = c.CloseWrite()
				recs := h.waitClosed(t, 1)
				checkErrs(t, recs, nil)
				t.Logf("%d bytes read in %v with WriteTimeout %v", got, time.Since(began), timeout)
				return
			}
			recs := h.waitClosed(t, 1)
			checkErrs(t, recs, ErrWriteTimeout)
			// Cut no sooner than WriteTimeout after the reader last took
			// bytes (less the sweep's tick, an eighth of it).
			if d := recs[0].st.endAt.Sub(lastRead); d < timeout-timeout/8 {
				t.Fatalf("cut %v after the last read; WriteTimeout is %v", d, timeout)
			}
			t.Logf("cut %v after the last read (%d bytes read)", recs[0].st.endAt.Sub(lastRead), got)
		})
	}
}
