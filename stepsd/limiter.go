package stepsd

import (
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// minRateShare is the least rate (requests per second) a reactor's share
// of Config.Rate may be for the Limiter to be split (splitLimiter): above
// what one reactor serves (the gnet peer's loop at most 1.4 M req/s,
// stepsd's 0.8 M, on the 16-core machine of profiles/), so that in
// practice a reactor's share of the rate does not bind before the whole
// would have.
const minRateShare = 1_000_000

// splitLimiter reports whether c's Limiter is split into one per reactor,
// each with a share of the bounds (Config's doc, "The Limiter"): more than
// one reactor, SharedLimiter unset, and shares that change nothing for a
// lone connection (every reactor's share of Concurrent at least
// MaxPipeline, the most one connection has in flight; of Rate at least
// minRateShare) and that leave no reactor without the queue the server
// has (Queue and Burst: 0, unlimited, or at least one per reactor).
func splitLimiter(c Config) bool {
	queueOK := func(q int) bool { return q == 0 || q < 0 || q >= c.Reactors }
	return c.Reactors > 1 && !c.SharedLimiter &&
		c.Concurrent/c.Reactors >= c.MaxPipeline &&
		c.Rate/c.Reactors >= minRateShare &&
		queueOK(c.Queue) && queueOK(c.Burst)
}

// share is reactor i's part of a server-wide bound n over k reactors: n/k,
// the first n%k reactors one more, so the parts add up to n. A queue
// length that is not a count (0: none, negative: unlimited, NoQueue) is
// every reactor's as it is.
func share(n, k, i int) int {
	if n <= 0 {
		return n
	}
	s := n / k
	if i < n%k {
		s++
	}
	return s
}

// newLimiters gives every shard its Limiter: one shared by all of them,
// or, when splitLimiter says so, one per shard with its share of the
// bounds, whose rate timer runs on the shard's own reactor.
//
// Why split: every request enters and leaves the Limiter, three atomic
// read-modify-writes on its state words; with one Limiter those words'
// cache lines move between the reactors' cores on every request. Measured
// on 16 cores, 8 reactors, 256 connections × pipeline 16: the Limiter's
// entry was 26% of stepsd's CPU, most of it the CompareAndSwap
// (profiles/notes/2026-11-27-limiter-round4.md). Split, a Limiter's words
// stay in one core's cache.
func (s *Server) newLimiters(rs []*reactor.Reactor) {
	c := s.cfg
	opts := func(i, k int) syncprim.LimiterOptions {
		return syncprim.LimiterOptions{
			Concurrent: share(c.Concurrent, k, i),
			MaxQueue:   share(c.Queue, k, i),
			Rate:       share(c.Rate, k, i),
			Period:     time.Second,
			Burst:      share(c.Burst, k, i),
		}
	}
	if !splitLimiter(c) {
		lim := syncprim.NewLimiter(rs[0], opts(0, 1))
		s.lims = []*syncprim.Limiter{lim}
		for _, sh := range s.shards {
			sh.lim = lim
		}
		return
	}
	for i, sh := range s.shards {
		sh.lim = syncprim.NewLimiter(sh.r, opts(i, len(s.shards)))
		s.lims = append(s.lims, sh.lim)
	}
}

// limiterStats sums the Limiters' snapshots: the server's concurrency and
// rate, as one Limiter's would read.
func (s *Server) limiterStats() (concurrency, rate syncprim.Stats) {
	for _, l := range s.lims {
		c, r := l.Stats()
		concurrency.Holders += c.Holders
		concurrency.Queued += c.Queued
		concurrency.Rejected += c.Rejected
		rate.Holders += r.Holders
		rate.Queued += r.Queued
		rate.Rejected += r.Rejected
	}
	return concurrency, rate
}
