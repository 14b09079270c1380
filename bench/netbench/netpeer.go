package netbench

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

// This file is the standard library's peer of the line-protocol server
// (server=net in cmd/loadbench): a goroutine per connection, a
// bufio.Reader and bufio.Writer each, the store of kvstore.go. Replies
// collect in the writer and are flushed once the reader holds no complete
// line, so a pipelined batch costs one read and one write, and a lone
// request is answered at once.
//
// SLEEP sleeps in the connection's goroutine: that keeps the replies in
// order and blocks no other connection, at the price of serving one
// connection's SLEEPs one after another.

// netWriteBuffer is the size of each connection's writer. Its reader's is
// MaxLine: ReadSlice fails with bufio.ErrBufferFull exactly when MaxLine
// bytes hold no "\n", a line too long.
const netWriteBuffer = 16 << 10

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

// serve runs one connection until the client closes it, a line is too
// long, or stop.
func (s *netServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReaderSize(c, MaxLine)
	w := bufio.NewWriterSize(c, netWriteBuffer)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line too long: the error, after the replies to the lines
			// before it, then close, as stepsd does.
			w.Write(appendInvalid(w.AvailableBuffer(), infoTooLong))
			w.Flush()
			return
		}
		if err != nil {
			return // io.EOF or a closed connection
		}
		line = line[:len(line)-1]
		req, info := stepsd.Parse(line)
		// AvailableBuffer: the reply is formatted straight into the
		// writer's free space, and Write then copies nothing.
		out := w.AvailableBuffer()
		switch {
		case info != "":
			out = appendInvalid(out, info)
		case req.Op == stepsd.OpSleep:
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
		if !lineBuffered(r) {
			if w.Flush() != nil {
				return
			}
		}
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

// lineBuffered reports whether r holds a complete line, which the next
// ReadSlice returns without reading from the connection. A partial line
// does not count: waiting for its end must not hold back the replies
// already written.
func lineBuffered(r *bufio.Reader) bool {
	n := r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := r.Peek(n) // buffered bytes only: no read
	return bytes.IndexByte(b, '\n') >= 0
}
