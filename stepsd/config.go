package stepsd

import (
	"runtime"
	"time"
)

// Config is a server's configuration. Zero fields take DefaultConfig's,
// except Queue and Burst, which mean what syncprim.LimiterOptions' MaxQueue
// and Burst mean (0: no queue, the spec's default; syncprim.Unlimited: no
// limit), the connection limits, which mean what netio.Options' mean (0:
// off), and Grace, Spin and Procs, whose zero is documented below.
//
// # The Limiter
//
// Concurrent, Queue, Rate and Burst bound the whole server: at most
// Concurrent requests execute and Queue wait for a slot, at most Rate start
// per second and Burst wait for the rate; beyond a queue, DefenseRejected.
// How they apply depends on the reactors:
//
//   - With one reactor, or SharedLimiter, or bounds too small to share
//     (below), one Limiter serves every reactor: the bounds are exact
//     across connections and reactors, and every request updates the
//     Limiter's shared atomic words, whose cache lines then move between
//     the reactors' cores (on 16 cores at 8 reactors, a quarter of the
//     server's CPU).
//   - Otherwise each reactor has its own Limiter with a share of each
//     bound (n/Reactors, the first n%Reactors reactors one more; 0 and
//     unlimited queues stay as they are), so the shares add up to the
//     server's bounds: a server never holds more requests than with one
//     Limiter (memory stays bounded the same way), but a reactor whose
//     share is full rejects (or queues) a request while another reactor
//     may have room. A connection's requests all run on its reactor.
//     This needs shares that change nothing for a lone connection: every
//     reactor's share of Concurrent at least MaxPipeline (the most
//     requests one connection has in flight), of Rate at least 1,000,000
//     per second (more than one reactor serves), and Queue and Burst 0,
//     unlimited, or at least Reactors. The defaults qualify up to 100
//     reactors. Metrics.Limiters says which applies.
type Config struct {
	Addr       string        // listen address
	Reactors   int           // reactors (one OS thread each); 0 = DefaultReactors()
	Pin        bool          // pin reactor i to CPU i
	Timeout    time.Duration // per request, from its arrival
	Concurrent int           // Limiter: requests executing at once
	Rate       int           // Limiter: requests started per second
	Queue      int           // Limiter: requests waiting for a concurrency slot; 0: none, syncprim.Unlimited: no limit; beyond it, DefenseRejected
	Burst      int           // Limiter: requests waiting for the rate; 0: none, syncprim.Unlimited: no limit
	// SharedLimiter keeps one Limiter for every reactor, with exact
	// server-wide bounds, even where each reactor could have its share
	// (Config's doc, "The Limiter").
	SharedLimiter bool
	// Protocol limits (Limits): beyond one, the request gets a protocol
	// error and the connection closes.
	MaxLine     int           // longest inline command, or array or bulk header, line ("\r\n" included)
	MaxBulk     int           // longest bulk string (Redis's proto-max-bulk-len)
	MaxArgs     int           // most elements of an array, or words of an inline command
	MaxRequest  int           // largest request, in bytes; also the bytes of keys and values a connection's requests in flight may hold before it stops reading
	MaxPipeline int           // requests in flight per connection before it stops reading
	Grace       time.Duration // Shutdown: how long in-flight requests get; 0 = Timeout + 1s
	// Connection limits (netio.Options; 0: off). IdleTimeout should be
	// longer than Timeout: a connection waiting for its answers is idle.
	IdleTimeout  time.Duration // no byte read or written for this long: closed
	ReadTimeout  time.Duration // a partial request line waited this long for its end: closed (slowloris)
	WriteTimeout time.Duration // the client took none of its replies for this long: closed (a slow but steady reader is kept)
	MaxConns     int           // open connections; beyond them a new one is closed at once
	Spin         time.Duration // reactor.Options.Spin: an idle reactor's look for posted work before it sleeps; 0: adaptive (the reactor's default), reactor.NoSpin (-1ns): off
	// Procs is the GOMAXPROCS Start makes sure of: if the process has
	// fewer, Start raises it (it never lowers it). 0: Reactors+1; negative:
	// leave GOMAXPROCS alone. A reactor sleeps in epoll_wait holding its
	// P; when no P is idle, the runtime's sysmon takes it away after 20
	// µs, and the loop must win one back when it wakes (a lock, often a
	// futex sleep and a context switch). One spare P keeps every loop's P
	// its own: measured 28k -> 17k context switches per second and 0.97
	// -> 0.83 µs of CPU per request at 16 pipelining connections
	// (profiles/notes/README.md, "stepsd ÷ gnet").
	Procs int
}

// DefaultReactors is the default number of reactors: one per CPU but one,
// and at least one. The CPU left over runs what a request costs outside
// the reactor threads, which on a small machine is much: the kernel's
// network work for the peer, the Go runtime's threads (with Procs'
// default GOMAXPROCS is then the number of CPUs, not more), and any
// client on the same machine. Measured on 2 CPUs with redis-benchmark -c
// 50 beside the server, one reactor against two: 20-28% less server CPU
// per request at pipeline 1 and 16, a sixth of the involuntary context
// switches, and on a quiet machine a pipeline-1 p99 about half as long
// (0.95-1.50 ms against 1.88-3.74; redis-server 0.70-1.41) with as many
// requests per second at pipeline 16 or more
// (profiles/notes/2026-11-27-p99-round7.md). Redis gives the same advice
// for its I/O threads: leave a core spare. Set Config.Reactors (stepsd
// -reactors) to use every CPU.
func DefaultReactors() int { return max(1, runtime.NumCPU()-1) }

// DefaultConfig returns the defaults: generous enough that 256 pipelining
// connections are never rejected, so the Limiter answers DefenseRejected
// only to real overload. Shared over up to 100 reactors ("The Limiter"),
// a reactor's share of Concurrent and Queue still holds the full
// pipelines of 512/Reactors connections, twice what netio's round-robin
// gives it of 256.
func DefaultConfig() Config {
	return Config{
		Addr:        "127.0.0.1:7070",
		Reactors:    DefaultReactors(),
		Timeout:     5 * time.Second,
		Concurrent:  65536,
		Rate:        100_000_000,
		Queue:       65536,
		Burst:       65536,
		MaxLine:     64 << 10,
		MaxBulk:     512 << 10,
		MaxArgs:     1024,
		MaxRequest:  1 << 20,
		MaxPipeline: 256,
		// A reply's wait is bounded by Timeout; an idle client gets a
		// minute, a line 10s, replies 10s to be read; 10,000 connections
		// of at most HighWater output each (netio's 256 KiB default).
		IdleTimeout:  time.Minute,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
		MaxConns:     10000,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Addr == "" {
		c.Addr = d.Addr
	}
	if c.Reactors <= 0 {
		c.Reactors = d.Reactors
	}
	if c.Timeout <= 0 {
		c.Timeout = d.Timeout
	}
	if c.Concurrent <= 0 {
		c.Concurrent = d.Concurrent
	}
	if c.Rate <= 0 {
		c.Rate = d.Rate
	}
	if c.MaxLine <= 0 {
		c.MaxLine = d.MaxLine
	}
	if c.MaxBulk <= 0 {
		c.MaxBulk = d.MaxBulk
	}
	if c.MaxArgs <= 0 {
		c.MaxArgs = d.MaxArgs
	}
	if c.MaxRequest <= 0 {
		c.MaxRequest = d.MaxRequest
	}
	if c.MaxPipeline <= 0 {
		c.MaxPipeline = d.MaxPipeline
	}
	if c.Grace <= 0 {
		c.Grace = c.Timeout + time.Second
	}
	if c.Procs == 0 {
		c.Procs = c.Reactors + 1
	}
	return c
}

// limits returns the protocol limits of c (with defaults).
func (c Config) limits() Limits {
	return Limits{MaxLine: c.MaxLine, MaxBulk: c.MaxBulk, MaxArgs: c.MaxArgs, MaxRequest: c.MaxRequest}
}
