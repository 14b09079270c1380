package netio

import (
	"net"

	"github.com/valyala/bytebufferpool"

	"github.com/asyncsteps/asyncsteps/internal/cast"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Conn is one TCP connection, owned by one reactor's loop. Its methods are
// for that loop only (Handler callbacks and the steps of flows on that
// reactor); off the loop they fail with ErrWrongThread. A Conn is not
// reused: after OnClose its methods report ErrClosed, so a flow that
// answers after the peer left does no harm.
type Conn struct {
	fd     int
	l      *loop
	remote net.Addr
	ctx    any

	state  uint16
	in     reactor.Interest           // what the poller is asked for
	opened bool                       // registered with the loop (OnClose owed)
	input  *bytebufferpool.ByteBuffer // read, not yet consumed; nil when empty
	output *bytebufferpool.ByteBuffer // queued; bytes before outOff are written; nil when empty
	outOff int
	linger reactor.Timer // Close's deadline for draining output

	// For the time limits (loop.now values; 0: not set): the last byte read
	// or written, since when input is kept, and since when output has
	// waited for the socket with no byte taken (the socket was found full
	// and nothing was written since).
	lastIO, inSince, blockedSince int64
	// unacked is the kernel's send queue (SIOCOUTQ) at the last sweep
	// while blocked; 0 when not blocked. It falling is the peer taking
	// output although no write of ours made progress: the kernel's
	// buffer, megabytes, says writable again only once a third of it has
	// drained, which a slow reader can take longer than WriteTimeout to do.
	unacked int

	prev, next *Conn // the loop's open connections
}

// Connection state bits. Invariant: the poller is asked for read exactly
// when none of stPaused, stOutFull, stEOF, stClosing is set, for write
// exactly when stWBlocked is, and for hang-up always (updateInterest keeps
// it so): a connection that is not read still learns of its peer's reset.
const (
	stPaused    uint16 = 1 << iota // PauseRead
	stOutFull                      // queued output reached HighWater
	stEOF                          // no more input: FIN read or Server.Shutdown
	stEOFCalled                    // OnEOF was called
	stStopping                     // Server.Shutdown reached it
	stClosing                      // Close: flush, then close
	stShutWr                       // CloseWrite: shut down writing once flushed
	stWrShut                       // writing is shut down
	stWBlocked                     // the socket buffer is full: wait for writable
	stQueued                       // in the loop's flush queue
	stRedeliver                    // a redelivery of kept input is posted
	stClosed
)

var buffers bytebufferpool.Pool

// Reactor returns the reactor the connection lives on. Safe from any goroutine.
func (c *Conn) Reactor() *reactor.Reactor { return c.l.r }

// RemoteAddr returns the peer's address. Safe from any goroutine.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// LocalAddr returns the server's listening address.
func (c *Conn) LocalAddr() net.Addr { return c.l.s.addr }

// SetContext attaches the handler's per-connection value. Loop only.
func (c *Conn) SetContext(v any) { c.ctx = v }

// Context returns what SetContext attached. Loop only.
func (c *Conn) Context() any { return c.ctx }

// Closed reports whether the connection is closed. Loop only.
func (c *Conn) Closed() bool { return c.state&stClosed != 0 }

// Buffered returns the number of queued output bytes not yet written.
func (c *Conn) Buffered() int {
	if c.output == nil {
		return 0
	}
	return len(c.output.B) - c.outOff
}

// Write queues p (copied) for the peer; it leaves in this loop iteration's
// flush. It fails with ErrClosed after Close, CloseWrite or the end of the
// connection.
func (c *Conn) Write(p []byte) (int, error) {
	if err := c.writable(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.output == nil {
		c.output = buffers.Get()
	}
	c.output.B = append(c.output.B, p...)
	c.queued()
	return len(p), nil
}

// Send writes p to the peer now, as Write followed by Flush does, but
// without copying what the socket takes: with nothing queued before it, p
// goes straight to write(2), and only what the socket does not take is
// queued (copied), to leave when it becomes writable. For a handler that
// has a batch of replies complete, one Send is one write. It fails as
// Write does; and since it writes at once, a write(2) that fails (the
// peer reset the connection) ends the connection there and then, as a
// failed Flush does: Send returns that error and the bytes written before
// it, and OnClose has run by the time it returns.
func (c *Conn) Send(p []byte) (int, error) {
	if err := c.writable(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.Buffered() > 0 || c.state&stWBlocked != 0 {
		// Behind queued output: keep the order.
		if c.output == nil {
			c.output = buffers.Get()
		}
		c.output.B = append(c.output.B, p...)
		c.queued()
		if c.state&stWBlocked == 0 {
			c.flush()
		}
		return len(p), nil
	}
	off := 0
	for off < len(p) {
		n, err := sysWrite(c.fd, p[off:])
		if n > 0 {
			off += n
			c.lastIO = c.l.r.CoarseNow() + 1 // l.now(), inlined (see read)
		}
		if err == errAgain {
			break
		}
		if err != nil {
			c.finish(err)
			return off, err
		}
	}
	if off == len(p) {
		return len(p), nil
	}
	// The socket is full: the rest waits for writable, as flush leaves it.
	c.output = buffers.Get()
	c.output.B = append(c.output.B[:0], p[off:]...)
	c.outOff = 0
	c.state |= stWBlocked
	if off > 0 {
		c.blockedSince = c.lastIO
	} else if c.blockedSince == 0 {
		c.blockedSince = c.l.now()
	}
	if c.state&stOutFull == 0 && c.Buffered() >= c.l.s.o.HighWater {
		c.state |= stOutFull
	}
	c.updateInterest()
	return len(p), nil
}

// WriteString is Write for a string, without converting it.
func (c *Conn) WriteString(s string) (int, error) {
	return c.Write(cast.StringBytes(s))
}

func (c *Conn) writable() error {
	switch {
	case !c.l.r.IsSameThread():
		return ErrWrongThread
	case c.state&(stClosed|stClosing|stShutWr|stWrShut) != 0:
		return ErrClosed
	}
	return nil
}

// queued notes that output was added.
func (c *Conn) queued() {
	if c.state&(stQueued|stWBlocked) == 0 {
		// A blocked socket is flushed when it becomes writable instead.
		c.l.queueFlush(c)
	}
	if c.state&stOutFull == 0 && c.Buffered() >= c.l.s.o.HighWater {
		c.state |= stOutFull
		c.updateInterest()
	}
}

// Flush writes the queued output now rather than at the end of the loop
// iteration: for a handler that knows its batch of replies is complete.
// Output the socket cannot take yet stays queued, as usual.
func (c *Conn) Flush() error {
	switch {
	case !c.l.r.IsSameThread():
		return ErrWrongThread
	case c.state&stClosed != 0:
		return ErrClosed
	case c.state&stWBlocked == 0 && c.Buffered() > 0:
		c.flush()
	}
	return nil
}

// PauseRead stops reading: no OnData until ResumeRead. A handler with as
// much work in flight for this connection as it allows calls it.
func (c *Conn) PauseRead() {
	if c.l.r.IsSameThread() && c.state&(stPaused|stClosed) == 0 {
		c.state |= stPaused
		c.updateInterest()
	}
}

// ResumeRead undoes PauseRead. Input kept unconsumed is offered again
// (from a posted task, never from inside the call), before any new read.
func (c *Conn) ResumeRead() {
	if !c.l.r.IsSameThread() || c.state&stPaused == 0 || c.state&stClosed != 0 {
		return
	}
	c.state &^= stPaused
	if c.inSince != 0 {
		c.inSince = c.l.now() // kept while paused: a backlog, not a slow peer
	}
	c.updateInterest()
	// Posted even with no input kept yet: called from inside OnData on a
	// fresh read, the rest is kept only once OnData returns.
	if c.state&stRedeliver == 0 && reactor.PostTo(c.l.r, redeliver, c, 0) {
		c.state |= stRedeliver
	}
}

// CloseWrite shuts down the writing side (the peer reads end of stream)
// once queued output is written; reading goes on.
func (c *Conn) CloseWrite() error {
	if err := c.writable(); err != nil {
		return err
	}
	c.state |= stShutWr
	if c.Buffered() == 0 {
		c.shutWrite()
	}
	return nil
}

// Close writes the queued output, then closes the connection; OnClose gets
// nil. Output still queued after Options.Linger is dropped and the
// connection reset (OnClose gets ErrLinger). Idempotent.
func (c *Conn) Close() error {
	if !c.l.r.IsSameThread() {
		return ErrWrongThread
	}
	if c.state&(stClosed|stClosing) != 0 {
		return nil
	}
	c.state |= stClosing
	c.updateInterest()
	if c.Buffered() == 0 {
		c.finish(nil)
		return nil
	}
	c.linger = reactor.AfterTo(c.l.r, c.l.s.o.Linger, lingerExpired, c, 0)
	return nil
}

// Abort closes the connection at once, dropping queued output; OnClose
// gets nil. Idempotent.
func (c *Conn) Abort() error {
	if !c.l.r.IsSameThread() {
		return ErrWrongThread
	}
	c.finish(nil)
	return nil
}

func lingerExpired(c *Conn, _ uint64) {
	c.linger = reactor.Timer{}
	c.expire(ErrLinger)
}

// expire closes c for a time limit (or Close's Linger). Output the peer has
// not taken, queued here or still in the kernel's send queue, is dropped
// with a reset (SO_LINGER 0): a plain close would hand it to the kernel,
// which keeps the socket in FIN-WAIT-1 with those bytes, outside MaxConns,
// for as long as the peer keeps its window shut (minutes). A connection
// with nothing unread closes as usual (FIN): its peer reads end of stream.
func (c *Conn) expire(err error) {
	if c.state&stClosed != 0 {
		return
	}
	s := c.l.s
	switch err {
	case ErrIdleTimeout:
		s.idleTimeouts.Add(1)
	case ErrReadTimeout:
		s.readTimeouts.Add(1)
	case ErrWriteTimeout:
		s.writeTimeouts.Add(1)
	case ErrLinger:
		s.lingerDrops.Add(1)
	}
	if c.Buffered() > 0 || sysUnsent(c.fd) > 0 {
		s.resets.Add(1)
		_ = sysResetOnClose(c.fd)
	}
	c.finish(err)
}

// onConnIO is every connection's poller callback.
func onConnIO(c *Conn, _ int, ev reactor.Event) {
	if ev&(reactor.EventWrite|reactor.EventError) != 0 && c.state&stWBlocked != 0 {
		c.state &^= stWBlocked
		c.flush()
	}
	if c.state&stClosed != 0 {
		return
	}
	switch {
	case ev&(reactor.EventRead|reactor.EventError) != 0 && c.in&reactor.InterestRead != 0:
		c.read()
	case ev&reactor.EventError != 0:
		// Not reading (paused, output full, after end of input): the
		// poller watches for hang-up alone, and this is the peer's reset
		// or another error. Reading would hand input to a paused
		// handler: the socket's pending error says what happened. A
		// reset ends the connection now, so its handler can give back
		// what its requests in flight hold (OnClose). Without an error
		// (both sides shut down) it is reported once and left.
		if err := sysSockError(c.fd); err != nil {
			c.finish(err)
		}
	}
	// EventHangup alone (the peer shut down its side while its input
	// waits) is left for the read that finds the end of stream: a
	// half-closed peer still reads its replies.
}

// read does one read(2): level-triggered polling calls again while more
// is there, after the loop's other work had its turn.
func (c *Conn) read() {
	buf := c.l.scratch
	n, err := sysRead(c.fd, buf)
	switch {
	case n > 0:
		// l.now() written out: now is over the inliner's budget (cost
		// 85), and a call on every read and every Send was about 14
		// instructions a read at pipeline 1
		// (profiles/notes/2026-11-28-srv3-round10.md).
		c.lastIO = c.l.r.CoarseNow() + 1
		c.deliver(buf[:n])
	case err == nil: // end of stream
		c.state |= stEOF
		c.updateInterest()
		c.maybeEOF()
	case err == errAgain:
	default:
		c.finish(err)
	}
}

// deliver offers new bytes, behind whatever input is kept.
func (c *Conn) deliver(data []byte) {
	if c.input == nil {
		k := c.callData(data)
		if c.state&stClosed != 0 || k == len(data) {
			return
		}
		c.input = buffers.Get()
		c.input.B = append(c.input.B[:0], data[k:]...)
		c.inSince = c.lastIO
	} else {
		c.input.B = append(c.input.B, data...)
		c.consumeInput()
	}
	c.checkInput()
}

// consumeInput offers the kept input and keeps what is not consumed.
func (c *Conn) consumeInput() {
	k := c.callData(c.input.B)
	if c.state&stClosed != 0 {
		return
	}
	rest := copy(c.input.B, c.input.B[k:])
	c.input.B = c.input.B[:rest]
	if rest == 0 {
		buffers.Put(c.input)
		c.input = nil
		c.inSince = 0
	}
}

func (c *Conn) checkInput() {
	if c.state&stClosed == 0 && c.input != nil && len(c.input.B) > c.l.s.o.MaxInput {
		c.l.s.inputTooLarge.Add(1)
		c.finish(ErrInputTooLarge)
	}
}

func redeliver(c *Conn, _ uint64) {
	c.state &^= stRedeliver
	if c.state&(stClosed|stPaused) != 0 {
		return
	}
	if c.input != nil && c.state&stStopping == 0 {
		c.consumeInput()
		c.checkInput()
	}
	c.maybeEOF()
}

// maybeEOF calls OnEOF once no more input can come and none is waiting
// for a paused handler or a posted redelivery (which calls maybeEOF once
// it has offered the kept input: the poller may report the FIN before it
// runs). Input kept by a handler that is not paused is an incomplete
// message that will never complete: dropped.
func (c *Conn) maybeEOF() {
	if c.state&(stEOF|stEOFCalled|stClosed|stPaused|stRedeliver) != stEOF {
		return
	}
	c.state |= stEOFCalled
	c.dropInput()
	c.callEOF()
}

// drain is Server.Shutdown reaching c: no more input, OnEOF now. A
// connection the handler closed already is only left to finish its flush.
func (c *Conn) drain() {
	if c.state&(stClosed|stClosing|stStopping) != 0 {
		return
	}
	c.state |= stStopping | stEOF
	c.state &^= stPaused
	c.dropInput()
	c.updateInterest()
	c.maybeEOF()
}

func (c *Conn) dropInput() {
	if c.input != nil {
		buffers.Put(c.input)
		c.input = nil
	}
	c.inSince = 0
}

// flush writes queued output until done or the socket is full.
func (c *Conn) flush() {
	o := c.l.s.o
	progress := false
	for c.Buffered() > 0 {
		n, err := sysWrite(c.fd, c.output.B[c.outOff:])
		if n > 0 {
			c.outOff += n
			c.lastIO = c.l.now()
			progress = true
		}
		if err == errAgain {
			c.state |= stWBlocked
			// WriteTimeout is "no progress for that long": a peer that
			// reads, however slowly, starts it again.
			if progress {
				c.blockedSince = c.lastIO
			} else if c.blockedSince == 0 {
				c.blockedSince = c.l.now()
			}
			if c.outOff >= o.LowWater && c.outOff > len(c.output.B)/2 {
				// The peer reads slowly: reclaim the written prefix
				// instead of growing the buffer past it.
				c.output.B = c.output.B[:copy(c.output.B, c.output.B[c.outOff:])]
				c.outOff = 0
			}
			break
		}
		if err != nil {
			c.finish(err)
			return
		}
	}
	if c.Buffered() == 0 {
		c.blockedSince, c.unacked = 0, 0
		if c.output != nil {
			buffers.Put(c.output)
			c.output, c.outOff = nil, 0
		}
	}
	if c.state&stOutFull != 0 && c.Buffered() < o.LowWater {
		c.state &^= stOutFull
	}
	c.updateInterest()
	if c.Buffered() == 0 && c.state&stClosed == 0 {
		switch {
		case c.state&stClosing != 0:
			c.finish(nil)
		case c.state&stShutWr != 0:
			c.shutWrite()
		}
	}
}

func (c *Conn) shutWrite() {
	if c.state&stWrShut == 0 {
		c.state |= stWrShut
		if err := sysShutdownWrite(c.fd); err != nil {
			c.finish(err)
		}
	}
}

// updateInterest asks the poller for what the state needs (see the state
// bits' invariant).
func (c *Conn) updateInterest() {
	if c.state&stClosed != 0 {
		return
	}
	// Hang-up and errors stay watched while nothing reads: a peer that
	// resets a paused connection is seen at once (onConnIO).
	want := reactor.InterestHangup
	if c.state&(stPaused|stOutFull|stEOF|stClosing) == 0 {
		want |= reactor.InterestRead
	}
	if c.state&stWBlocked != 0 {
		want |= reactor.InterestWrite
	}
	if want == c.in {
		return
	}
	if err := c.l.r.SetInterest(c.fd, want); err != nil {
		c.in = 0
		c.finish(err)
		return
	}
	c.in = want
}

// finish closes the connection: descriptor, buffers, loop list, OnClose.
func (c *Conn) finish(err error) {
	if c.state&stClosed != 0 {
		return
	}
	c.state |= stClosed
	l := c.l
	if !c.linger.IsZero() {
		l.r.Stop(c.linger)
		c.linger = reactor.Timer{}
	}
	if c.in != 0 || c.opened {
		_ = l.r.Unwatch(c.fd)
	}
	c.in = 0
	_ = sysClose(c.fd)
	c.dropInput()
	if c.output != nil {
		buffers.Put(c.output)
		c.output, c.outOff = nil, 0
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else if l.head == c {
		l.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.prev, c.next = nil, nil
	l.s.connGone()
	if c.opened {
		c.callClose(err)
	}
}

// The handler calls. A panic aborts this connection only.

func (c *Conn) callOpen() {
	defer c.recoverHandler()
	c.l.h.OnOpen(c)
}

func (c *Conn) callData(b []byte) (n int) {
	defer c.recoverHandler()
	n = c.l.h.OnData(c, b)
	if n < 0 || n > len(b) {
		c.finish(ErrBadConsume)
		return 0
	}
	return n
}

func (c *Conn) callEOF() {
	defer c.recoverHandler()
	c.l.h.OnEOF(c)
}

func (c *Conn) recoverHandler() {
	if v := recover(); v != nil {
		c.finish(&PanicError{Value: v})
	}
}

func (c *Conn) callClose(err error) {
	defer func() {
		if v := recover(); v != nil {
			c.l.r.ReportPanic(v) // the connection is gone already
		}
	}()
	c.l.h.OnClose(c, err)
}
