package stepsd

import (
	"context"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/netio"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// A read's flow is named after its requests' command (PIPELINE when they
// differ, flow.go), and a request split off into a flow of its own after
// its command, so a CPU profile of the server splits by command (go tool
// pprof -tagfocus=flow=GET). Interned once: naming a flow is a table read.
var (
	opNames = func() [opEnd]*engine.Name {
		n := [opEnd]*engine.Name{
			OpSet:   engine.NewName("SET"),
			OpGet:   engine.NewName("GET"),
			OpDel:   engine.NewName("DEL"),
			OpEcho:  engine.NewName("ECHO"),
			OpSleep: engine.NewName("SLEEP"),
			OpPing:  engine.NewName("PING"),
			OpConst: engine.NewName("CONNECTION"),
			OpQuit:  engine.NewName("QUIT"),
		}
		for op := opFirstData; op < opEnd; op++ { // the value types' commands (datacmd.go)
			n[op] = engine.NewName(dataOpName(op))
		}
		return n
	}()
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
	// Commands has, per reactor by index, the counters of its requests
	// by command (commands it has seen only). Their flows are per read, so
	// Reactors[i].ByName counts reads, not requests.
	Commands [][]CommandMetrics
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
	var ok []bool
	m.Commands, ok = s.readCommands(ctx)
	for i, r := range ok {
		if !r && i < len(m.Err) && m.Err[i] == nil {
			m.Err[i] = engine.ErrNoSnapshot
		}
	}
	m.Concurrency, m.Rate = s.limiterStats()
	m.Limiters = len(s.lims)
	m.Net = s.ns.Stats()
	m.ProtocolErrors = s.protocolErrors.Load()
	return m
}

// Per-command counters. A read's requests run in one flow (flow.go), so the
// engine's counters by flow name (engine.Metrics.ByName) count reads, named
// after their command or PIPELINE; stepsd counts its requests itself, by
// command, on each reactor's loop (shard.cmds), with no atomic.

// cmdInvalid is the counters' index of a refused request, the one number
// below the value types' commands that is no Op (opNames has no name for
// it): below 32, for the bit set of a direct run's commands. numCmds is
// the counters' count.
const (
	cmdInvalid = int(opFirstData) - 1
	numCmds    = int(opEnd)
)

// cmdNames names each counter index, as flowName names flows.
var cmdNames = func() (n [numCmds]*engine.Name) {
	for i := range opNames {
		n[i] = flowName(Op(i), "")
	}
	n[cmdInvalid] = invalidName // flowName's for it too: opNames has none
	return n
}()

// cmdIndex is the counters' index of a request of op (bad: refused).
func cmdIndex(op Op, bad string) int {
	if bad != "" || int(op) >= len(opNames) || opNames[op] == nil {
		return cmdInvalid
	}
	return int(op)
}

// cmdCounts are one command's counters on one shard. Loop-owned.
type cmdCounts struct {
	started, ended   uint64 // read; reply written or abandoned (flush)
	failed, canceled uint64 // of ended: an error reply (answerError), abandoned (abandon)
	nanos            int64
}

// CommandMetrics counts the requests of one command on one reactor.
type CommandMetrics struct {
	Command string // SET, GET, DEL, ECHO, SLEEP, PING, CONNECTION (commands answered with a fixed reply), QUIT, INVALID (refused), or a value type's command (INCR, LPUSH, ZADD...)
	// Started counts the requests read; Succeeded those answered with a
	// reply, Failed those answered with an error (-Timeout,
	// -DefenseRejected, -ERR ...), Canceled those whose connection went
	// away before their answer. The other Started are in flight.
	Started, Succeeded, Failed, Canceled uint64
	// Time is the summed life of the ended requests, from their read to
	// their reply's write (or their abandon), on the reactor's coarse
	// clock (reactor.CoarseNow: exact to within one loop round).
	// Time / (Succeeded+Failed+Canceled) is their mean latency.
	Time time.Duration
}

// readCommands is a snapshot of the shards' per-command counters, taken on
// each shard's loop; ok[i] is false where shard i did not answer before
// ctx was done.
func (s *Server) readCommands(ctx context.Context) (cmds [][]CommandMetrics, ok []bool) {
	type snap struct {
		sh   *shard
		c    [numCmds]cmdCounts
		done chan struct{}
	}
	cmds, ok = make([][]CommandMetrics, len(s.shards)), make([]bool, len(s.shards))
	for i, sh := range s.shards {
		sn := &snap{sh: sh, done: make(chan struct{})}
		if !reactor.PostTo(sh.r, func(sn *snap, _ uint64) { sn.c = sn.sh.cmds; close(sn.done) }, sn, 0) {
			continue
		}
		select {
		case <-sn.done:
		case <-ctx.Done():
			continue
		}
		ok[i] = true
		for c := range sn.c {
			x := sn.c[c]
			if x.started == 0 {
				continue
			}
			cmds[i] = append(cmds[i], CommandMetrics{
				Command: cmdNames[c].String(), Started: x.started,
				Succeeded: x.ended - x.failed - x.canceled, Failed: x.failed, Canceled: x.canceled,
				Time: time.Duration(x.nanos),
			})
		}
	}
	return cmds, ok
}
