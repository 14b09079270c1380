package netbench

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"time"

	"github.com/asyncsteps/asyncsteps/stepsd"
	"github.com/panjf2000/gnet/v2"
)

// This file is the gnet peer of stepsd (server=gnet in cmd/loadbench):
// what a plain gnet user would write. One gnet.Run with multicore event
// loops; OnTraffic parses every complete request (stepsd.Parser) with
// Peek/Discard, appends the replies to one per-connection buffer and writes
// it with one c.Write; the store is kvstore.go's sharded map. Nothing here
// uses the asyncsteps engine: gnet is the reactor stepsd is built on, so
// this is the server without the engine.
//
// SLEEP is the one asynchronous command. Its reply, and every reply after
// it on the same connection, waits in the connection's pending queue until
// its timer fires; the timer goroutine hands the completion back to the
// connection's event loop (EventLoop().Execute), since only the loop may
// touch the queue or write to the connection. It is correct rather than
// fast: it is not in the load mix.

// stopTimeout bounds a peer's stop.
const stopTimeout = 5 * time.Second

// StartGnet starts the gnet peer on addr (host:port; port 0 picks a free
// one) with loops event loops, and returns once it listens, with the bound
// address. stop shuts the engine down (its connections are closed), waits
// until gnet.Run has returned, and reports an error if that takes longer
// than five seconds.
func StartGnet(addr string, loops int) (bound string, stop func() error, err error) {
	if loops < 1 {
		return "", nil, fmt.Errorf("gnet peer: %d event loops", loops)
	}
	s := &gnetServer{store: newStore(), booted: make(chan string, 1)}
	ran := make(chan error, 1)
	go func() {
		ran <- gnet.Run(s, "tcp://"+addr,
			gnet.WithMulticore(true),
			gnet.WithNumEventLoop(loops),
			// gnet's default logger writes INFO lines to stderr, in the
			// middle of the benchmark's tables; WithLogLevel only applies
			// to a log file.
			gnet.WithLogger(quietLogger{}),
		)
	}()
	select {
	case bound = <-s.booted:
	case err := <-ran:
		if err == nil {
			err = errors.New("gnet.Run returned before OnBoot")
		}
		return "", nil, fmt.Errorf("gnet peer: %w", err)
	}
	if bound == "" {
		// OnBoot could not read the address; the engine runs, so stop it.
		s.eng.Stop(context.Background())
		<-ran
		return "", nil, fmt.Errorf("gnet peer: %w", s.bootErr)
	}
	stop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		// Engine.Stop rather than gnet.Stop: the package-level Stop finds
		// the engine by the address string it was started with, and every
		// peer started on "127.0.0.1:0" has the same one.
		if err := s.eng.Stop(ctx); err != nil {
			return fmt.Errorf("gnet peer: stop: %w", err)
		}
		select {
		case err := <-ran:
			if err != nil {
				return fmt.Errorf("gnet peer: %w", err)
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("gnet peer: gnet.Run has not returned: %w", ctx.Err())
		}
	}
	return bound, stop, nil
}

// quietLogger is a gnet logging.Logger that keeps errors only.
type quietLogger struct{}

func (quietLogger) Debugf(string, ...any)          {}
func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Warnf(string, ...any)           {}
func (quietLogger) Errorf(format string, a ...any) { log.Printf("gnet: "+format, a...) }
func (quietLogger) Fatalf(format string, a ...any) { log.Fatalf("gnet: "+format, a...) }

// gnetServer is the peer's gnet.EventHandler. Its methods run on the event
// loops; each connection's state is touched only by its own loop.
type gnetServer struct {
	gnet.BuiltinEventEngine
	store *store

	eng     gnet.Engine // set by OnBoot, before booted is sent
	booted  chan string // the bound address, or "" and bootErr
	bootErr error
}

// gnetConn is one connection's state, its gnet.Conn context.
type gnetConn struct {
	out []byte // replies of the current OnTraffic (or completion), written at its end
	// pending holds, in order, a SLEEP whose timer has not fired yet and
	// every reply after it: a reply is written only once all before it
	// are. Empty when no SLEEP is in flight, which is the fast path.
	pending []*gnetPending
	closed  bool // set by OnClose: a timer's completion must not write
	// closing is set by a protocol error (or QUIT) while a SLEEP is
	// pending: its reply waits in the queue, input is ignored, and the
	// connection closes once the queue is written.
	closing bool
	parser  stepsd.Parser
}

// gnetPending is one entry of a connection's pending queue: either a SLEEP
// (its timer, and done once it fired) or the replies that followed one.
type gnetPending struct {
	sleep bool
	done  bool
	timer *time.Timer
	data  []byte // !sleep: replies held back
}

// OnBoot records the engine (for stop) and reports the bound address: with
// port 0 only the listener knows it, so it is read from a duplicate of the
// listener's descriptor.
func (s *gnetServer) OnBoot(eng gnet.Engine) gnet.Action {
	s.eng = eng
	addr, err := listenerAddr(eng)
	if err != nil {
		s.bootErr = err
	}
	s.booted <- addr
	return gnet.None
}

func listenerAddr(eng gnet.Engine) (string, error) {
	fd, err := eng.Dup()
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), "gnet listener")
	defer f.Close()
	ln, err := net.FileListener(f) // dups again; closing ln leaves gnet's socket alone
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// OnOpen gives the connection its state.
func (s *gnetServer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(&gnetConn{out: make([]byte, 0, 4096), parser: stepsd.Parser{Limits: limits, StringsOnly: true}})
	return nil, gnet.None
}

// OnClose stops the connection's timers; one that already fired finds
// closed set and does nothing.
func (s *gnetServer) OnClose(c gnet.Conn, _ error) gnet.Action {
	st, _ := c.Context().(*gnetConn)
	if st == nil {
		return gnet.None
	}
	st.closed = true
	for _, p := range st.pending {
		if p.timer != nil {
			p.timer.Stop()
		}
	}
	st.pending = nil
	return gnet.None
}

// OnTraffic serves every complete request in the inbound buffer and
// writes their replies with one c.Write. A partial request stays buffered
// for the next call. A protocol error (or QUIT) is answered and closes the
// connection, once the replies before it are written.
func (s *gnetServer) OnTraffic(c gnet.Conn) gnet.Action {
	st := c.Context().(*gnetConn)
	if st.closing {
		c.Discard(-1) // closing once the pending replies are out
		return gnet.None
	}
	buf, _ := c.Peek(-1) // everything buffered; valid until Discard
	st.out = st.out[:0]
	consumed := 0
	closing := false
	var req stepsd.Request // parsed into, not returned: as stepsd's read loop
	for {
		n, fatal := st.parser.ParseInto(&req, buf[consumed:])
		if fatal != "" {
			*st.replyDst() = appendProtocolError(*st.replyDst(), fatal)
			closing = true
			break
		}
		if n == 0 {
			break // the rest of a request is still to come
		}
		consumed += n
		if req.Op == stepsd.OpNone {
			continue
		}
		s.serve(c, st, &req)
		if req.Op == stepsd.OpQuit && req.Bad == "" {
			closing = true
			break
		}
	}
	action := gnet.None
	if closing {
		if len(st.pending) == 0 {
			action = gnet.Close // gnet writes what is buffered before it closes
		} else {
			st.closing = true // wake closes
		}
		consumed = len(buf)
	}
	// Not Discard(0): gnet discards everything when n <= 0.
	if consumed > 0 {
		c.Discard(consumed)
	}
	if len(st.out) > 0 {
		c.Write(st.out) // an error closes the connection inside gnet
	}
	return action
}

// serve serves one request: its reply goes to st.out, or to the pending
// queue if a SLEEP is in flight.
func (s *gnetServer) serve(c gnet.Conn, st *gnetConn, req *stepsd.Request) {
	if req.Op == stepsd.OpSleep && req.Bad == "" {
		s.sleep(c, st, time.Duration(req.Ms)*time.Millisecond)
		return
	}
	dst := st.replyDst()
	*dst = s.store.appendReply(*dst, req)
}

// replyDst is where the next reply goes: st.out, or, behind a pending
// SLEEP, the data entry at the queue's tail.
func (st *gnetConn) replyDst() *[]byte {
	n := len(st.pending)
	if n == 0 {
		return &st.out
	}
	last := st.pending[n-1]
	if last.sleep {
		last = new(gnetPending)
		st.pending = append(st.pending, last)
	}
	return &last.data
}

// sleep queues a SLEEP and arms its timer. The timer's goroutine only posts
// the completion to the connection's loop.
func (s *gnetServer) sleep(c gnet.Conn, st *gnetConn, d time.Duration) {
	p := &gnetPending{sleep: true}
	st.pending = append(st.pending, p)
	el := c.EventLoop()
	p.timer = time.AfterFunc(d, func() {
		// An error means the engine is shutting down, and with it the
		// connection: there is nobody left to reply to.
		_ = el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			s.wake(c, st, p)
			return nil
		}))
	})
}

// wake runs on the connection's loop once p's timer fired: it writes, in
// order, every reply at the head of the queue that is no longer waiting
// for a SLEEP.
func (s *gnetServer) wake(c gnet.Conn, st *gnetConn, p *gnetPending) {
	if st.closed {
		return // c is released; its descriptor may belong to another connection
	}
	p.done = true
	st.out = st.out[:0]
	n := 0
	for _, h := range st.pending {
		if h.sleep {
			if !h.done {
				break
			}
			st.out = append(st.out, stepsd.ReplyOK...)
		} else {
			st.out = append(st.out, h.data...)
		}
		n++
	}
	if n == 0 {
		return // an earlier SLEEP is still running
	}
	rest := copy(st.pending, st.pending[n:])
	clear(st.pending[rest:]) // no stale pointers past the length
	st.pending = st.pending[:rest]
	c.Write(st.out)
	if rest == 0 && st.closing {
		c.Close() // queued on this loop, after the write
	}
}
