package stepsd

import (
	"context"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/netio"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// Each request's flow is named after its command, so a CPU profile of the
// server splits by command (go tool pprof -tagfocus=flow=GET) and the
// metrics count flows by command. Interned once: naming a flow is a table
// read.
var (
	opNames = [...]*engine.Name{
		OpSet:   engine.NewName("SET"),
		OpGet:   engine.NewName("GET"),
		OpDel:   engine.NewName("DEL"),
		OpEcho:  engine.NewName("ECHO"),
		OpSleep: engine.NewName("SLEEP"),
		OpPing:  engine.NewName("PING"),
		OpConst: engine.NewName("CONNECTION"),
		OpQuit:  engine.NewName("QUIT"),
	}
	invalidName = engine.NewName("INVALID")
)

// flowName is the name of the flow of a request of op; bad requests are
// INVALID.
func flowName(op Op, bad string) *engine.Name {
	if bad != "" || int(op) >= len(opNames) || opNames[op] == nil {
		return invalidName
	}
	return opNames[op]
}

// Metrics is a snapshot of a running server's counters.
type Metrics struct {
	// Reactors has one entry per reactor, by index; Err[i] is set when
	// reactor i did not take its snapshot (its loop is stuck or closed)
	// and Reactors[i] is then zero.
	Reactors []engine.Metrics
	Err      []error
	// Limiter's two parts: concurrency slots and the rate, summed over
	// the Limiters when there is one per reactor (Config, "The Limiter").
	Concurrency, Rate syncprim.Stats
	Limiters          int // 1: one Limiter shared by the reactors; else one per reactor
	Conns             int // open connections
	// Net counts the connections accepted, refused at MaxConns and ended
	// by each connection limit (netio's).
	Net netio.Stats
	// ProtocolErrors counts the connections closed for a protocol error (a
	// request over a limit such as MaxLine or MaxBulk, or framing lost).
	ProtocolErrors uint64
}

// Metrics takes a snapshot of the server's counters: each reactor's,
// taken on its loop, waiting at most until ctx is done for each. Safe from
// any goroutine; it allocates (for monitoring, not for the request path).
func (s *Server) Metrics(ctx context.Context) Metrics {
	rs := s.g.Reactors()
	m := Metrics{Reactors: make([]engine.Metrics, len(rs)), Err: make([]error, len(rs)), Conns: s.ns.Conns()}
	for i, r := range rs {
		m.Reactors[i], m.Err[i] = engine.ReadMetrics(ctx, r)
	}
	m.Concurrency, m.Rate = s.limiterStats()
	m.Limiters = len(s.lims)
	m.Net = s.ns.Stats()
	m.ProtocolErrors = s.protocolErrors.Load()
	return m
}
