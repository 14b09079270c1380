package main

import (
	"time"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

// startStepsd starts our server in the child: stepsd with loops reactors (pinned when pin is set),
// one Limiter shared by them when shared is set (Config.SharedLimiter), its defaults otherwise, except the Limiter's bounds when lim sets them
// (the overload scenario's small limits). It is the only use of package
// stepsd here, so that the peers' rows can be built and run on their own
// while stepsd changes.
func startStepsd(addr string, loops int, lim limits, pin, shared bool) (bound string, stop func() error, err error) {
	cfg := stepsd.DefaultConfig()
	cfg.Addr = addr
	cfg.Reactors = loops
	cfg.Pin = pin
	cfg.SharedLimiter = shared
	cfg.Spin = spinStepsd
	if lim.concurrent > 0 {
		cfg.Concurrent = lim.concurrent
	}
	if lim.queue > 0 {
		cfg.Queue = lim.queue
	}
	s, err := stepsd.Start(cfg)
	if err != nil {
		return "", nil, err
	}
	return s.Addr().String(), func() error { return s.Shutdown(time.Second) }, nil
}
