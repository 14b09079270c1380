package netio

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Server accepts TCP connections and serves them on a reactor.Group.
type Server struct {
	h     Handler
	o     Options
	addr  *net.TCPAddr
	lfd   int // owned by the accepting reactor's loop; -1 once closed
	loops []*loop
	acc   *loop // the accepting reactor's

	live     atomic.Int64 // connections accepted and not yet closed
	accepted atomic.Uint64
	refused  atomic.Uint64 // closed at once: over MaxConns
	// Connections ended by a limit (Stats); atomics, for Stats from any
	// goroutine: each is counted once per connection, off the hot path.
	idleTimeouts, readTimeouts, writeTimeouts, lingerDrops, inputTooLarge, resets atomic.Uint64
	// The refusals' log (the accepting loop's): how many the last line
	// reported, and whether a line is due a second after it.
	loggedRefused uint64
	logPending    bool
	stopping      atomic.Bool // Shutdown began, or a reactor shut down: accept no more
	shutdown      atomic.Bool // Shutdown began
	idleMu        sync.Mutex
	idle          chan struct{} // closed when live drops to 0 while stopping
	lclosed       chan struct{} // closed once the listener is closed
	lonce         sync.Once
	started       chan error // the accepting loop's answer to Listen
}

// loop is a Server's state on one reactor. Loop-owned.
type loop struct {
	s       *Server
	h       Handler // s.h, read by every callback: from this line, which a read loads anyway (c.l), not the Server's
	r       *reactor.Reactor
	scratch []byte  // what each read(2) reads into
	head    *Conn   // open connections, for Shutdown and reactor shutdown
	flushQ  []*Conn // connections with output queued since the last flush
	spareQ  []*Conn // flushQ's other buffer: a flush may queue more (OnClose writes)
	posted  bool    // a flush task is queued
	sweep   time.Duration
}

// Listen opens a listening socket on addr ("host:port"; port 0 picks one)
// and serves it on g, which must be running or about to run. Call it from
// any goroutine except one of g's loops: it waits until the accepting loop
// has taken the socket.
func Listen(g *reactor.Group, addr string, h Handler, o Options) (*Server, error) {
	if g == nil || g.Len() == 0 || h == nil {
		return nil, errors.New("netio: Listen needs a reactor group and a handler")
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	fd, bound, err := listenTCP(addr, o)
	if err != nil {
		return nil, err
	}
	s := &Server{h: h, o: o, addr: bound, lfd: fd, idle: make(chan struct{}), lclosed: make(chan struct{})}
	for _, r := range g.Reactors() {
		l := &loop{s: s, h: h, r: r, scratch: make([]byte, o.ReadSize), sweep: o.sweepEvery()}
		s.loops = append(s.loops, l)
		reactor.AtShutdownTo(r, loopShutdown, l, 0)
		if l.sweep > 0 {
			reactor.PostTo(r, sweepLoop, l, 0)
		}
	}
	s.acc = s.loops[0]
	s.started = make(chan error, 1)
	if !reactor.PostTo(s.acc.r, startAccept, s, 0) {
		_ = sysClose(fd)
		s.dropHooks()
		return nil, reactor.ErrClosed
	}
	if err := <-s.started; err != nil {
		s.dropHooks()
		return nil, err
	}
	return s, nil
}

// dropHooks forgets the reactors' shutdown hooks of a server that no
// longer owns descriptors, so a long-lived group does not keep it.
func (s *Server) dropHooks() {
	for _, l := range s.loops {
		reactor.RemoveAtShutdownOf(l.r, l)
	}
}

// startAccept runs on the accepting loop: it watches the listener.
func startAccept(s *Server, _ uint64) {
	err := reactor.WatchTo(s.acc.r, s.lfd, reactor.InterestRead, onAcceptable, s)
	if err != nil {
		s.closeListener()
	}
	s.started <- err
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.addr }

// Conns returns the number of open connections. Safe from any goroutine.
func (s *Server) Conns() int { return int(s.live.Load()) }

// Accepted returns the number of connections accepted so far.
func (s *Server) Accepted() uint64 { return s.accepted.Load() }

// Refused returns the number of connections closed at once because
// Options.MaxConns were open. Safe from any goroutine.
func (s *Server) Refused() uint64 { return s.refused.Load() }

// Stats counts a server's connections: accepted, refused and ended by each
// limit, since Listen. Every field counts up, except Open.
type Stats struct {
	Open     int    // open now (Conns)
	Accepted uint64 // accepted and opened
	Refused  uint64 // closed at once: Options.MaxConns were open (Refused)
	// Closed by a time limit (ErrIdleTimeout, ErrReadTimeout,
	// ErrWriteTimeout), by Close's Linger (ErrLinger), for unconsumed
	// input over MaxInput (ErrInputTooLarge).
	IdleTimeouts, ReadTimeouts, WriteTimeouts, LingerExpired, InputTooLarge uint64
	// Of the time-limit and Linger closes, those with output the peer had
	// not taken, which were closed with a reset.
	Resets uint64
}

// Stats returns the server's counters. Safe from any goroutine.
func (s *Server) Stats() Stats {
	return Stats{
		Open:          s.Conns(),
		Accepted:      s.accepted.Load(),
		Refused:       s.refused.Load(),
		IdleTimeouts:  s.idleTimeouts.Load(),
		ReadTimeouts:  s.readTimeouts.Load(),
		WriteTimeouts: s.writeTimeouts.Load(),
		LingerExpired: s.lingerDrops.Load(),
		InputTooLarge: s.inputTooLarge.Load(),
		Resets:        s.resets.Load(),
	}
}

// refuseLogEvery is how often the refusals' log says how many more came.
const refuseLogEvery = time.Second

// refuse closes a connection accepted over MaxConns. The first refusal
// after a quiet second is logged at once; those that follow within a
// second are counted and reported a second later, in one line with their
// true number, and so on while they go on. It runs on the accepting loop.
func (s *Server) refuse(fd int) {
	n := s.refused.Add(1) // counted before the peer can see the close
	_ = sysClose(fd)
	if s.logPending {
		return
	}
	s.o.Logf("netio: %d connections open (Options.MaxConns): refusing new ones; %d refused so far", s.o.MaxConns, n)
	s.loggedRefused = n
	s.logPending = true
	reactor.AfterTo(s.acc.r, refuseLogEvery, logRefusals, s, 0)
}

// logRefusals reports the refusals since the last line, if any, and then
// looks again a second later; after a quiet second the next refusal is
// logged at once.
func logRefusals(s *Server, _ uint64) {
	n := s.refused.Load()
	if n == s.loggedRefused {
		s.logPending = false
		return
	}
	s.o.Logf("netio: %d connections refused in the last %v (Options.MaxConns %d); %d refused so far", n-s.loggedRefused, refuseLogEvery, s.o.MaxConns, n)
	s.loggedRefused = n
	reactor.AfterTo(s.acc.r, refuseLogEvery, logRefusals, s, 0)
}

// sweepLoop closes the loop's connections that are over a time limit, then
// runs again; it stops once the server has shut down and its connections
// are gone.
func sweepLoop(l *loop, _ uint64) {
	o, t := &l.s.o, l.now()
	for c := l.head; c != nil; {
		next := c.next // finish unlinks c
		if c.state&stClosed == 0 {
			if o.WriteTimeout > 0 && c.blockedSince != 0 {
				// The peer took output from the kernel's queue since the
				// last sweep: progress, as a write of ours would be.
				q := sysUnsent(c.fd)
				if q < c.unacked {
					c.blockedSince = t
				}
				c.unacked = q
			}
			switch {
			case o.WriteTimeout > 0 && c.blockedSince != 0 && t-c.blockedSince > int64(o.WriteTimeout):
				c.expire(ErrWriteTimeout)
			case o.ReadTimeout > 0 && c.inSince != 0 && c.state&stPaused == 0 && t-c.inSince > int64(o.ReadTimeout):
				c.expire(ErrReadTimeout)
			case o.IdleTimeout > 0 && c.Buffered() == 0 && t-c.lastIO > int64(o.IdleTimeout):
				c.expire(ErrIdleTimeout)
			}
		}
		c = next
	}
	if l.s.shutdown.Load() && l.head == nil {
		return
	}
	reactor.AfterTo(l.r, l.sweep, sweepLoop, l, 0)
}

// acceptBatch bounds the connections taken per readiness event, so a flood
// of connects cannot hold the accepting loop from its other work.
const acceptBatch = 64

// fdLimitPause is how long accepting stops when the process is out of
// descriptors: the listener is level-triggered, so retrying at once spins.
const fdLimitPause = 10 * time.Millisecond

func onAcceptable(s *Server, lfd int, _ reactor.Event) {
	for i := 0; i < acceptBatch && s.lfd >= 0; i++ {
		fd, ra, err := accept(lfd, s.o.Nagle)
		if err != nil {
			if isFDLimit(err) {
				if err := s.acc.r.SetInterest(lfd, 0); err != nil {
					// Still polled: the loop spins on the listener until
					// descriptors free up. Worth a line in the log.
					s.o.Logf("netio: pause accepting on %v: %v", s.addr, err)
				}
				reactor.AfterTo(s.acc.r, fdLimitPause, resumeAccept, s, 0)
			}
			return
		}
		if s.stopping.Load() {
			_ = sysClose(fd)
			continue
		}
		if s.o.MaxConns > 0 && s.live.Load() >= int64(s.o.MaxConns) {
			s.refuse(fd)
			continue
		}
		s.live.Add(1)
		s.accepted.Add(1)
		l := s.loops[int(s.accepted.Load()-1)%len(s.loops)]
		if l == s.acc {
			l.open(fd, ra)
			continue
		}
		c := &Conn{fd: fd, l: l, remote: ra}
		if !reactor.PostTo(l.r, openPosted, c, 0) {
			_ = sysClose(fd)
			s.connGone()
		}
	}
}

// resumeAccept polls the listener again after fdLimitPause. If that fails
// the listener is not polled and nothing would ever accept again: the
// failure is logged and retried after another pause.
func resumeAccept(s *Server, _ uint64) {
	if s.lfd < 0 {
		return
	}
	if err := s.acc.r.SetInterest(s.lfd, reactor.InterestRead); err != nil {
		s.o.Logf("netio: resume accepting on %v: %v; retrying in %v", s.addr, err, fdLimitPause)
		reactor.AfterTo(s.acc.r, fdLimitPause, resumeAccept, s, 0)
	}
}

func openPosted(c *Conn, _ uint64) {
	c.l.openConn(c)
}

// closeListener runs on the accepting loop.
func (s *Server) closeListener() {
	if s.lfd >= 0 {
		_ = s.acc.r.Unwatch(s.lfd)
		_ = sysClose(s.lfd)
		s.lfd = -1
	}
	s.lonce.Do(func() { close(s.lclosed) })
}

// connGone accounts for a connection that closed (or never opened).
func (s *Server) connGone() {
	if s.live.Add(-1) == 0 && s.stopping.Load() {
		s.signalIdle()
	}
}

func (s *Server) signalIdle() {
	s.idleMu.Lock()
	select {
	case <-s.idle:
	default:
		close(s.idle)
	}
	s.idleMu.Unlock()
}

// Shutdown stops accepting, then tells every connection that no more
// input will come (OnEOF; input not yet consumed is dropped) and waits for
// their handlers to close them. Connections still open after grace are
// aborted with ErrShutdown. It returns once every connection is closed.
// Call it from any goroutine except the group's loops, before closing the
// group.
func (s *Server) Shutdown(grace time.Duration) error {
	if !s.shutdown.Swap(true) {
		s.stopping.Store(true)
		defer s.dropHooks()
		if reactor.PostTo(s.acc.r, stopListener, s, 0) {
			<-s.lclosed
		}
		for _, l := range s.loops {
			reactor.PostTo(l.r, drainLoop, l, 0)
		}
		if s.live.Load() == 0 {
			s.signalIdle()
		}
	}
	// A later call (Close during a long Shutdown) waits for its own grace
	// only: whichever runs out first aborts what is left.
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.idle:
		return nil
	case <-t.C:
	}
	for _, l := range s.loops {
		// false: a closed reactor aborted its connections at its shutdown.
		reactor.PostTo(l.r, abortLoop, l, 0)
	}
	<-s.idle
	return nil
}

// Close is Shutdown with no grace: every connection is aborted at once,
// also when a Shutdown with a longer grace is under way.
func (s *Server) Close() error { return s.Shutdown(0) }

func stopListener(s *Server, _ uint64) { s.closeListener() }

func drainLoop(l *loop, _ uint64) {
	// A snapshot: OnEOF may close any connection, not only its own, so
	// the list cannot be walked while it runs.
	var conns []*Conn
	for c := l.head; c != nil; c = c.next {
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.drain() // a closed one is skipped
	}
}

func abortLoop(l *loop, _ uint64) {
	for l.head != nil {
		l.head.finish(ErrShutdown)
	}
}

// loopShutdown runs when a reactor shuts down: its connections (and, on
// the accepting reactor, the listener) close with it.
func loopShutdown(l *loop, _ uint64) {
	s := l.s
	s.stopping.Store(true)
	if l == s.acc {
		s.closeListener()
	}
	for l.head != nil {
		l.head.finish(reactor.ErrClosed)
	}
	if s.live.Load() == 0 {
		s.signalIdle()
	}
}

// open takes a descriptor accepted on this very loop.
func (l *loop) open(fd int, ra net.Addr) {
	l.openConn(&Conn{fd: fd, l: l, remote: ra})
}

// openConn registers c with the loop and calls OnOpen.
func (l *loop) openConn(c *Conn) {
	const in = reactor.InterestRead | reactor.InterestHangup
	if err := reactor.WatchTo(l.r, c.fd, in, onConnIO, c); err != nil {
		_ = sysClose(c.fd)
		l.s.connGone()
		return
	}
	c.in = in
	c.lastIO = c.l.now()
	c.next = l.head
	if l.head != nil {
		l.head.prev = c
	}
	l.head = c
	c.opened = true
	c.callOpen()
	if c.state&stStopping == 0 && l.s.stopping.Load() {
		c.drain() // accepted just before Shutdown looked at this loop
	}
}

// queueFlush schedules c's output for this iteration's flush.
func (l *loop) queueFlush(c *Conn) {
	c.state |= stQueued
	l.flushQ = append(l.flushQ, c)
	if !l.posted {
		l.posted = true
		reactor.PostTo(l.r, flushLoop, l, 0)
	}
}

// flushLoop writes the output every connection queued since the last one.
func flushLoop(l *loop, _ uint64) {
	l.posted = false
	q := l.flushQ
	l.flushQ, l.spareQ = l.spareQ[:0], nil
	for i, c := range q {
		q[i] = nil
		c.state &^= stQueued
		if c.state&stClosed == 0 {
			c.flush()
		}
	}
	if l.spareQ == nil {
		l.spareQ = q[:0]
	}
}
