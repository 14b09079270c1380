package netbench

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

// This file is the standard library's peer of stepsd (server=net in
// cmd/loadbench): a goroutine per connection, an input buffer and a
// bufio.Writer each, stepsd.Parser, the store of kvstore.go. Replies
// collect in the writer and are flushed once the input holds no complete
// request, so a pipelined batch costs one read and one write, and a lone
// request is answered at once.
//
// SLEEP sleeps in the connection's goroutine: that keeps the replies in
// order and blocks no other connection, at the price of serving one
// connection's SLEEPs one after another.

// netWriteBuffer is the size of each connection's writer; netReadBuffer
// the first size of its input buffer, which grows to hold a whole request
// (within the parser's limits).
const (
	netWriteBuffer = 16 << 10
	netReadBuffer  = 16 << 10
)

// StartNet starts the net peer on addr (host:port; port 0 picks a free
// one) and returns once it listens, with the bound address. stop closes
// the listener and every connection, and waits for all the server's
// goroutines to return.
func StartNet(addr string) (bound string, stop func() error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("net peer: %w", err)
	}
	s := &netServer{
		ln:    ln,
		store: newStore(),
		done:  make(chan struct{}),
		conns: make(map[net.Conn]struct{}),
	}
	s.wg.Add(1)
	go s.accept()
	var once sync.Once
	stop = func() error {
		once.Do(s.stop)
		return nil
	}
	return ln.Addr().String(), stop, nil
}

// netServer is the net peer: its listener, its connections (so that stop
// can close them) and the goroutines serving them.
type netServer struct {
	ln    net.Listener
	store *store
	done  chan struct{} // closed by stop: ends SLEEPs and the accept loop

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool // under mu: set by stop, so accept closes a late conn itself

	wg sync.WaitGroup // accept and every conn goroutine
}

func (s *netServer) stop() {
	close(s.done)
	s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close() // wakes the goroutine out of Read, Write or Flush
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *netServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return // stop closed the listener
			default:
			}
			// Out of descriptors, or a connection reset before Accept:
			// back off and retry, as net/http's Server does.
			time.Sleep(5 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// serve runs one connection until the client closes it, a protocol
// error or QUIT, or stop.
func (s *netServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	p := stepsd.Parser{Limits: limits, StringsOnly: true}
	buf := make([]byte, 0, netReadBuffer)
	w := bufio.NewWriterSize(c, netWriteBuffer)
	for {
		// Serve every complete request buffered, then flush the replies
		// once none is: a pipelined batch costs one read and one write.
		off := 0
		var req stepsd.Request // parsed into, not returned: as stepsd's read loop
		for {
			n, fatal := p.ParseInto(&req, buf[off:])
			if fatal != "" {
				// The error, after the replies to the requests before
				// it, then close, as stepsd does.
				w.Write(appendProtocolError(w.AvailableBuffer(), fatal))
				w.Flush()
				return
			}
			if n == 0 {
				break
			}
			off += n
			// AvailableBuffer: the reply is formatted straight into the
			// writer's free space, and Write then copies nothing.
			out := w.AvailableBuffer()
			switch {
			case req.Op == stepsd.OpNone:
				continue
			case req.Op == stepsd.OpSleep && req.Bad == "":
				// The replies before it are not held for the sleep.
				if w.Flush() != nil || !s.sleep(time.Duration(req.Ms)*time.Millisecond) {
					return
				}
				out = append(out, stepsd.ReplyOK...)
			default:
				out = s.store.appendReply(out, &req)
			}
			if _, err := w.Write(out); err != nil {
				return
			}
			if req.Op == stepsd.OpQuit && req.Bad == "" {
				w.Flush()
				return
			}
		}
		if w.Flush() != nil {
			return
		}
		buf = buf[:copy(buf, buf[off:])]
		if cap(buf)-len(buf) < netReadBuffer/4 {
			buf = slices.Grow(buf, cap(buf)) // the partial request is large: room for its rest
		}
		n, err := c.Read(buf[len(buf):cap(buf)])
		if err != nil {
			return // io.EOF or a closed connection
		}
		buf = buf[:len(buf)+n]
	}
}

// sleep waits for d, or for stop (then it reports false).
func (s *netServer) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.done:
		return false
	}
}
