package stepsd

import (
	"net"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/asyncsteps/asyncsteps/netio"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// Server is a running stepsd: a reactor group, a netio server on it, the
// keys, and per reactor a shard of the server's loop-owned state.
type Server struct {
	cfg    Config
	g      *reactor.Group
	ns     *netio.Server
	lims   []*syncprim.Limiter // one shared, or one per shard (newLimiters)
	shards []*shard
	keys   *store

	protocolErrors atomic.Uint64 // connections closed for a protocol error
}

// Start starts the reactors and listens; it returns once the server
// accepts connections.
func Start(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if cfg.Procs > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(cfg.Procs)
	}
	// Unpinned reactors run unlocked: measured half the latency of a
	// locked thread at low concurrency on shared cores, and the same
	// throughput under load (profiles/README.md, note 10).
	ro := reactor.Options{CPU: -1, Spin: cfg.Spin, Unlocked: true}
	if cfg.Pin {
		ro.CPU, ro.Pin, ro.Unlocked = 0, true, false
	}
	g, err := reactor.NewGroup(cfg.Reactors, ro)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, g: g, keys: newStore()}
	for i, r := range g.Reactors() {
		s.shards = append(s.shards, &shard{s: s, r: r, idx: i, parser: Parser{Limits: cfg.limits()}})
	}
	s.newLimiters(g.Reactors())
	for _, sh := range s.shards {
		reactor.PostTo(sh.r, trimRequests, sh, 0)
	}
	g.Start()
	no := netio.Options{
		IdleTimeout:  cfg.IdleTimeout,
		ReadTimeout:  cfg.ReadTimeout,
		WriteTimeout: cfg.WriteTimeout,
		MaxConns:     cfg.MaxConns,
		// A partial request is kept until it is whole (at most
		// MaxRequest, else a protocol error), and a paused connection
		// keeps what it read: one read more.
		MaxInput: cfg.MaxRequest + 64<<10,
		ReadSize: 64 << 10,
	}
	if s.ns, err = netio.Listen(g, cfg.Addr, (*handler)(s), no); err != nil {
		_ = g.Close()
		return nil, err
	}
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ns.Addr() }

// Conns returns the number of open connections.
func (s *Server) Conns() int { return s.ns.Conns() }

// Shutdown stops accepting and reading; requests in flight finish (or time
// out) and their replies are written; then connections close and the
// reactors stop. Connections still open after grace (0: Config.Grace) are
// aborted.
func (s *Server) Shutdown(grace time.Duration) error {
	if grace <= 0 {
		grace = s.cfg.Grace
	}
	_ = s.ns.Shutdown(grace)
	return s.g.Close()
}
