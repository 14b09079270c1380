package syncprim

import (
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// LimiterOptions configures a Limiter (spec 2.5). Zero fields take the
// spec's defaults: Concurrent 1, Rate 1, Period 1s, MaxQueue 0 and Burst 0
// (no waiting: a flow that cannot enter at once is rejected).
//
// Queue lengths: for NewMutex and NewThrottle 0 means unlimited (the spec's null); for LimiterOptions.MaxQueue and Burst 0 means no queue (the spec's default); Unlimited (or any negative) means no limit everywhere.
type LimiterOptions struct {
	Concurrent int           // flows inside at once
	MaxQueue   int           // flows waiting for a concurrency slot
	Rate       int           // entries per Period
	Period     time.Duration // the rate's period
	Burst      int           // flows waiting for the rate
}

// Limiter bounds both concurrency and rate (spec 1.11.7, 2.5): a Mutex of
// Concurrent slots around a Throttle of Rate entries per Period.
type Limiter struct {
	m *Mutex
	t *Throttle
}

// NewLimiter returns a Limiter whose rate timer runs on r.
//
// Queue lengths: for NewMutex and NewThrottle 0 means unlimited (the spec's null); for LimiterOptions.MaxQueue and Burst 0 means no queue (the spec's default); Unlimited (or any negative) means no limit everywhere.
func NewLimiter(r *reactor.Reactor, o LimiterOptions) *Limiter {
	if o.Concurrent <= 0 {
		o.Concurrent = 1
	}
	if o.Rate <= 0 {
		o.Rate = 1
	}
	return &Limiter{
		m: newMutex(o.Concurrent, o.MaxQueue),
		t: newThrottle(r, o.Rate, o.Period, o.Burst),
	}
}

// Sync implements engine.Sync: f runs within both limits; a flow over
// either queue limit fails with DefenseRejected.
func (l *Limiter) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	addSync(as, l.m, l.t, f, onerror)
}

// rejectInfo is the ErrorInfo of a DefenseRejected: it names the object
// whose queue was full, the Limiter for either of a Limiter's parts.
func rejectInfo(sp *spec, rate bool) string {
	switch {
	case sp.m != nil && sp.t != nil && rate:
		return "limiter: rate queue (burst) is full"
	case sp.m != nil && sp.t != nil:
		return "limiter: concurrency queue is full"
	case rate:
		return "throttle queue is full"
	}
	return "mutex queue is full"
}

// Stats returns snapshots of the concurrency and rate parts.
func (l *Limiter) Stats() (concurrency, rate Stats) { return l.m.Stats(), l.t.Stats() }
