package netio

import (
	"errors"
	"log"
	"time"
)

// Options tunes a Server. Zero fields take the defaults in brackets.
//
// A read or write of up to 256 KiB is a raw system call, which holds up a
// garbage collection's stop-the-world for its copy; a larger one goes
// through the runtime's system-call path, a few hundred instructions
// dearer but never holding one up. So a ReadSize above 256 KiB makes every
// read that much dearer.
type Options struct {
	Backlog   int           // listen(2) backlog [1024]
	ReadSize  int           // bytes asked of each read(2), per reactor scratch buffer [64 KiB]
	MaxInput  int           // unconsumed input a connection may keep [1 MiB]
	HighWater int           // queued output at which a connection stops reading [256 KiB]
	LowWater  int           // queued output below which it reads again [HighWater/4]
	Linger    time.Duration // how long Close waits for queued output to drain; then the connection is reset [5s]
	Nagle     bool          // leave Nagle's algorithm on (TCP_NODELAY is set by default)
	ReusePort bool          // SO_REUSEPORT on the listener, for several servers on one port

	// Time limits, each off when zero (as in net/http.Server). A
	// connection over one is closed at once and OnClose gets the matching
	// error; with output its peer has not taken (queued, or still in the
	// kernel's send queue) the close is a reset, which drops that output
	// instead of leaving it to the kernel (package doc). They are checked
	// by a sweep of each loop's connections a few times per shortest
	// limit, so one may be exceeded by up to an eighth of the shortest (at
	// least 5ms, at most 1s). Server.Stats counts the closes by each.
	IdleTimeout  time.Duration // no byte read or written for this long, and no output waiting [0: off]; ErrIdleTimeout
	ReadTimeout  time.Duration // an incomplete message (input kept by OnData) waited this long for the rest, more bytes or not [0: off]; ErrReadTimeout
	WriteTimeout time.Duration // output waited this long with no byte of it taken by the peer (the socket stayed full; any progress starts it again, so a slow but steady reader is kept) [0: off]; ErrWriteTimeout

	// MaxConns bounds the open connections [0: no limit]. A connection
	// accepted beyond it is closed at once and counted (Server.Refused,
	// Server.Stats). The first refusal after a quiet second is logged at
	// once; those that follow are logged once a second, with their number.
	MaxConns int
	// Logf is where the server logs (refused connections) [log.Printf].
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() Options {
	if o.Backlog <= 0 {
		o.Backlog = 1024
	}
	if o.ReadSize <= 0 {
		o.ReadSize = 64 << 10
	}
	if o.MaxInput <= 0 {
		o.MaxInput = 1 << 20
	}
	if o.HighWater <= 0 {
		o.HighWater = 256 << 10
	}
	if o.LowWater <= 0 || o.LowWater > o.HighWater {
		o.LowWater = o.HighWater / 4
	}
	if o.Linger <= 0 {
		o.Linger = 5 * time.Second
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	return o
}

// sweepEvery is how often each loop checks its connections' time limits
// (0: no limit is set).
func (o Options) sweepEvery() time.Duration {
	var m time.Duration
	for _, d := range []time.Duration{o.IdleTimeout, o.ReadTimeout, o.WriteTimeout} {
		if d > 0 && (m == 0 || d < m) {
			m = d
		}
	}
	if m == 0 {
		return 0
	}
	return min(max(m/8, 5*time.Millisecond), time.Second)
}

// validate reports an option that cannot be honoured.
func (o Options) validate() error {
	switch {
	case o.IdleTimeout < 0:
		return errors.New("netio: negative Options.IdleTimeout")
	case o.ReadTimeout < 0:
		return errors.New("netio: negative Options.ReadTimeout")
	case o.WriteTimeout < 0:
		return errors.New("netio: negative Options.WriteTimeout")
	case o.MaxConns < 0:
		return errors.New("netio: negative Options.MaxConns")
	}
	return nil
}

// now is the connections' clock for the time limits, in nanoseconds: the
// loop's coarse clock (reactor.CoarseNow, read once each time the loop
// wakes, so a read costs a load, not a clock read: two clock reads a
// request at pipeline 1 were about 100 instructions,
// profiles/notes/2026-11-27-srv-round7.md), never 0, which means "not
// set". It lags the true time by at most the loop's current round, far
// below any time limit. Loop only. Written out in read and Send, the
// per-read paths (it is not inlined).
func (l *loop) now() int64 { return l.r.CoarseNow() + 1 }
