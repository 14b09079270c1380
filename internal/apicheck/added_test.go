package apicheck

import (
	"context"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// The names CONTRACT.md lists under "Added since (kept from now on)", and
// the ones its prose promises (syncprim's Stats, the Lock kit's Holds):
// each assignment fails to compile if one goes or its signature drifts.
type pinned struct{ _ int }

var (
	// reactor
	_ reactor.Options                                                                                 = reactor.Options{CPU: 0, Pin: true, Spin: reactor.NoSpin, Unlocked: false}
	_ time.Duration                                                                                   = reactor.NoSpin
	_ func(*reactor.Reactor) bool                                                                     = (*reactor.Reactor).IsLoopGoroutine
	_ func(*reactor.Reactor) int64                                                                    = (*reactor.Reactor).CoarseNow
	_ func(*reactor.Reactor, func(*pinned, uint64), *pinned, uint64) bool                             = reactor.PostTo[pinned]
	_ func(*reactor.Reactor, time.Duration, func(*pinned, uint64), *pinned, uint64) reactor.Timer     = reactor.AfterTo[pinned]
	_ func(*reactor.Reactor, int, reactor.Interest, func(*pinned, int, reactor.Event), *pinned) error = reactor.WatchTo[pinned]
	_ func(*reactor.Reactor, func(*pinned, uint64), *pinned, uint64)                                  = reactor.AtShutdownTo[pinned]
	_ func(*reactor.Reactor, *pinned)                                                                 = reactor.RemoveAtShutdownOf[pinned]
	_ func(*reactor.Reactor) (reactor.Loop, bool)                                                     = (*reactor.Reactor).Loop
	_ func(reactor.Loop, func()) reactor.Handle                                                       = reactor.Loop.Immediate
	_ func(reactor.Loop)                                                                              = reactor.Loop.RunUntilIdle
	_ func(reactor.Loop) *reactor.Reactor                                                             = reactor.Loop.Reactor
	_                                                                                                 = reactor.Metrics{Iterations: 0, TasksRun: 0, TimersFired: 0, Wakeups: 0, RingHighWater: 0, PollTime: 0, RunTime: 0, Spins: 0, SpinsFound: 0}

	// engine
	_ func(*reactor.Reactor) engine.Stats                                                                                                                 = engine.StatsOf
	_ func(*engine.Steps) engine.Ref                                                                                                                      = (*engine.Steps).Ref
	_ func(*engine.Steps)                                                                                                                                 = (*engine.Steps).ReleaseAtEnd
	_ func(string) *engine.Name                                                                                                                           = engine.NewName
	_                                                                                                                                                     = engine.MaxNames
	_ func(*engine.Steps, string)                                                                                                                         = (*engine.Steps).SetName
	_ func(*engine.Steps, *engine.Name)                                                                                                                   = (*engine.Steps).SetFlowName
	_ func(*engine.Steps) *engine.Name                                                                                                                    = (*engine.Steps).FlowName
	_ func(*engine.Steps, context.Context)                                                                                                                = (*engine.Steps).SetContext
	_ func(*engine.Steps) context.Context                                                                                                                 = (*engine.Steps).Context
	_ func(*engine.Promise, context.Context) (*engine.Args, error)                                                                                        = (*engine.Promise).WaitContext
	_ func(context.Context, *reactor.Reactor) (engine.Metrics, error)                                                                                     = engine.ReadMetrics
	_ error                                                                                                                                               = engine.ErrNoSnapshot
	_                                                                                                                                                     = engine.Metrics{Stats: engine.Stats{}, ByName: []engine.NameMetrics(nil), Reactor: reactor.Metrics{}}
	_ func(*engine.Lock[pinned], *pinned, func(*engine.Steps, *pinned) bool, func(*engine.Steps, *pinned), func(*engine.Steps, *pinned, engine.ExecFunc)) = (*engine.Lock[pinned]).Init
	_ func(*engine.Steps, *engine.Lock[pinned], engine.ExecFunc, engine.ErrorFunc) *engine.Steps                                                          = engine.AddLocked[pinned]
	_ func(*engine.Steps, any) bool                                                                                                                       = (*engine.Steps).Holds
	_ func(*reactor.Reactor) bool                                                                                                                         = engine.RunReady
	_ func(bool)                                                                                                                                          = engine.SetForcedGC

	// syncprim: "Stats() of each reports Holders, Queued and Rejected"
	_ func(*syncprim.Mutex) syncprim.Stats                       = (*syncprim.Mutex).Stats
	_ func(*syncprim.Throttle) syncprim.Stats                    = (*syncprim.Throttle).Stats
	_ func(*syncprim.Limiter) (concurrency, rate syncprim.Stats) = (*syncprim.Limiter).Stats
	_                                                            = syncprim.Stats{Holders: 0, Queued: 0, Rejected: 0}
)
