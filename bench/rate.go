package bench

import (
	"context"
	"testing"

	"golang.org/x/time/rate"
)

// This file is the golang.org/x/time/rate peer of the sync scenarios
// (impl=rate): a token bucket, rate.Limiter, whose Wait reserves a token
// and, when the bucket is empty, sleeps until the token's time on a timer
// of its own.

// ThrottlePassRate: SyncWorkers goroutines call Wait on one rate.Limiter
// whose limit (10^12/s, a burst of 2^30) they never reach, then run the
// section. b.N counts entries.
func ThrottlePassRate(b *testing.B) {
	runWorkers(b, "ThrottlePassRate", false, 0, 0, rateStep(rate.NewLimiter(rate.Limit(1e12), 1<<30)))
}

// ThrottleWaitRate: SyncWorkers goroutines call Wait on one rate.Limiter
// of WaitRate tokens per WaitPeriod, with a burst of WaitRate (the same
// limit as ours), which they exceed, then run the section. b.N counts
// entries.
func ThrottleWaitRate(b *testing.B) {
	runWorkers(b, "ThrottleWaitRate", false, WaitRate, WaitPeriod, rateStep(newWaitLimiter()))
}

// newWaitLimiter is ThrottleWait's limit as a rate.Limiter.
func newWaitLimiter() *rate.Limiter {
	return rate.NewLimiter(rate.Limit(float64(WaitRate)/WaitPeriod.Seconds()), WaitRate)
}

// rateStep is one worker's step: Wait, then the section.
func rateStep(lim *rate.Limiter) func(w *syncWork, i int) {
	ctx := context.Background()
	return func(w *syncWork, i int) {
		if err := lim.Wait(ctx); err != nil {
			panic(err) // a background context is never done, and a token never exceeds the burst
		}
		w.enter(i)
	}
}
