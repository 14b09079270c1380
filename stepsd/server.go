package stepsd

import (
	"bytes"
	"net"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/netio"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// Server is a running stepsd: a reactor group, a netio server on it and,
// per reactor, one shard of the key space.
type Server struct {
	cfg    Config
	g      *reactor.Group
	ns     *netio.Server
	lim    *syncprim.Limiter
	shards []*shard
}

// Start starts the reactors and listens; it returns once the server
// accepts connections.
func Start(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	// Unpinned reactors run unlocked: measured half the latency of a
	// locked thread at low concurrency on shared cores, and the same
	// throughput under load (profiles/README.md, note 10).
	ro := reactor.Options{CPU: -1, Spin: cfg.Spin, Unlocked: true}
	if cfg.Pin {
		ro.CPU, ro.Unlocked = 0, false
	}
	g, err := reactor.NewGroup(cfg.Reactors, ro)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, g: g}
	for i, r := range g.Reactors() {
		s.shards = append(s.shards, &shard{s: s, r: r, idx: i, m: make(map[string]*entry), outbox: make([]hopQueue, cfg.Reactors)})
	}
	s.lim = syncprim.NewLimiter(g.Reactors()[0], syncprim.LimiterOptions{
		Concurrent: cfg.Concurrent,
		MaxQueue:   cfg.Queue,
		Rate:       cfg.Rate,
		Period:     time.Second,
		Burst:      cfg.Queue,
	})
	g.Start()
	if s.ns, err = netio.Listen(g, cfg.Addr, (*handler)(s), netio.Options{}); err != nil {
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

// shard is one reactor's part of the server: its keys and its pooled
// requests. Loop-owned.
type shard struct {
	s    *Server
	r    *reactor.Reactor
	idx  int
	m    map[string]*entry // the keys that hash to this shard
	free *request          // recycled requests
	out  []byte            // reply scratch

	posted bool       // endOfIteration is posted
	dirty  []*conn    // connections with replies to write at the end of the iteration
	outbox []hopQueue // by owner shard: hops to send at the end of the iteration
}

// entry is a stored value; updated in place, so a SET of an existing key
// does not allocate.
type entry struct{ v []byte }

// shardOf returns the shard that owns key (FNV-1a).
func (s *Server) shardOf(key []byte) *shard {
	h := uint32(2166136261)
	for _, c := range key {
		h = (h ^ uint32(c)) * 16777619
	}
	return s.shards[h%uint32(len(s.shards))]
}

func (s *Server) shardOn(r *reactor.Reactor) *shard {
	for _, sh := range s.shards {
		if sh.r == r {
			return sh
		}
	}
	return nil
}

// conn is a connection's protocol state. Loop-owned.
type conn struct {
	c          *netio.Conn
	sh         *shard
	head, tail *request // in flight, in arrival order: replies leave in this order
	inflight   int      // requests not yet answered
	undone     int      // of those, the ones whose reply is not known yet
	hopsOut    int      // of those, the ones away on another shard
	paused     bool     // stopped reading at MaxPipeline
	eof        bool     // no more requests will come
	tooLong    bool     // a line over MaxLine: close once the earlier replies are out
	closed     bool
	dirty      bool     // in the shard's dirty list
	cursor     *request // the first request whose key command may not have gone yet (see dispatchKeyed)
}

// handler implements netio.Handler for the server.
type handler Server

func (h *handler) OnOpen(c *netio.Conn) {
	s := (*Server)(h)
	c.SetContext(&conn{c: c, sh: s.shardOn(c.Reactor())})
}

func (h *handler) OnData(c *netio.Conn, data []byte) int {
	cn := c.Context().(*conn)
	s := (*Server)(h)
	n := 0
	for !cn.tooLong {
		if cn.inflight >= s.cfg.MaxPipeline {
			cn.paused = true
			c.PauseRead()
			break
		}
		i := bytes.IndexByte(data[n:], '\n')
		if i < 0 {
			if len(data)-n >= s.cfg.MaxLine {
				cn.lineTooLong()
			}
			break
		}
		if i+1 > s.cfg.MaxLine {
			cn.lineTooLong()
			break
		}
		cn.start(data[n : n+i])
		n += i + 1
	}
	return n
}

func (h *handler) OnEOF(c *netio.Conn) {
	cn := c.Context().(*conn)
	cn.eof = true
	cn.maybeClose()
}

func (h *handler) OnClose(c *netio.Conn, _ error) {
	c.Context().(*conn).closed = true
}

// lineTooLong stops reading; the connection closes, with an error line,
// once the requests before it are answered.
func (cn *conn) lineTooLong() {
	cn.tooLong = true
	cn.c.PauseRead()
	cn.maybeClose()
}

func (cn *conn) maybeClose() {
	if cn.inflight > 0 || cn.closed {
		return
	}
	if cn.tooLong {
		cn.sh.out = AppendError(cn.sh.out[:0], engine.InvalidRequest, "line too long")
		_, _ = cn.c.Write(cn.sh.out)
	}
	if cn.tooLong || cn.eof {
		_ = cn.c.Close()
	}
}

// request is one request's flow and everything it needs, pooled per shard.
// Its root is reused for request after request: the flow's steps find the
// request through State().User.
type request struct {
	root *engine.Steps
	sh   *shard // where the flow runs (the connection's shard)
	cn   *conn
	next *request // in cn's queue, the shard's free list or its retired list

	op    Op
	bad   string // parse error: the flow fails with InvalidRequest
	key   []byte // owned copies of the line's parts
	val   []byte // SET's value, ECHO's text
	ms    int64
	res   []byte // GET's value
	found bool

	errCode, errInfo string
	done             bool // the reply is known

	ext        engine.External // the waiting step of a SLEEP or a hop
	timer      reactor.Timer   // SLEEP's
	ready      bool            // in execStep: its key command waits for its turn
	dispatched bool            // its key command was applied or sent to its shard
	hopNext    *request        // in a batch of hops
	hopping    bool            // a hop to another shard is out: the request may not be reused
	retired    bool            // answered (timed out); waiting for the hop to come back
}

func (sh *shard) newRequest() *request {
	if rq := sh.free; rq != nil && !rq.root.Executing() {
		sh.free = rq.next
		rq.next = nil
		return rq
	}
	rq := &request{sh: sh, root: engine.New(sh.r)}
	rq.root.State().User = rq
	return rq
}

// start parses line and starts its flow.
func (cn *conn) start(line []byte) {
	rq := cn.sh.newRequest()
	rq.cn = cn
	req, bad := Parse(line)
	rq.op, rq.bad, rq.ms = req.Op, bad, req.Ms
	rq.key = append(rq.key[:0], req.Key...)
	rq.val = rq.val[:0]
	if req.Op == OpEcho {
		rq.val = append(rq.val, req.Text...)
	} else {
		rq.val = append(rq.val, req.Value...)
	}
	if cn.tail == nil {
		cn.head = rq
	} else {
		cn.tail.next = rq
	}
	cn.tail = rq
	if cn.cursor == nil {
		cn.cursor = rq
	}
	cn.inflight++
	cn.undone++
	rq.root.Add(serveStep, serveError).Add(replyStep)
	rq.root.Execute()
}

func requestOf(as *engine.Steps) *request { return as.State().User.(*request) }

// serveStep bounds the request in time and runs it behind the Limiter.
func serveStep(as *engine.Steps) {
	rq := requestOf(as)
	if rq.bad != "" {
		as.Error(engine.InvalidRequest, rq.bad)
	}
	as.SetTimeout(rq.sh.s.cfg.Timeout)
	as.Sync(rq.sh.s.lim, execStep)
}

// serveError turns a failure into the reply; the flow goes on to replyStep.
func serveError(as *engine.Steps, code string) {
	rq := requestOf(as)
	rq.errCode, rq.errInfo = code, as.State().ErrorInfo
	as.Success()
}

// execStep does the request's work, inside the Limiter.
func execStep(as *engine.Steps) {
	rq := requestOf(as)
	switch rq.op {
	case OpEcho:
	case OpSleep:
		rq.ext = as.External()
		as.SetCancel(cancelSleep)
		rq.timer = rq.sh.r.After(time.Duration(rq.ms)*time.Millisecond, sleepDone, unsafe.Pointer(rq), 0)
	default:
		// Key commands apply in the connection's order: this one goes
		// when every earlier one of its connection has gone. That is
		// now, unless the Limiter let an earlier one in later.
		rq.ready = true
		rq.cn.dispatchKeyed(as, rq)
		if !rq.dispatched {
			rq.ext = as.External() // its turn comes in dispatchKeyed
		}
	}
}

// keyed reports whether rq is a command on a key.
func (rq *request) keyed() bool { return rq.op == OpSet || rq.op == OpGet || rq.op == OpDel }

// dispatchKeyed sends the connection's key commands that are ready, in
// arrival order, up to the first that is not (still in the Limiter's
// queue): cursor is where the next call starts. self is the request whose
// execStep calls (its step, as, has not returned yet), or nil.
func (cn *conn) dispatchKeyed(as *engine.Steps, self *request) {
	rq := cn.cursor
	for ; rq != nil; rq = rq.next {
		if !rq.keyed() || rq.dispatched || rq.done {
			continue
		}
		if !rq.ready {
			break
		}
		rq.ready, rq.dispatched = false, true
		owner := rq.sh.s.shardOf(rq.key)
		if owner == rq.sh {
			owner.apply(rq)
			if rq != self {
				rq.ext.Success()
			}
			continue
		}
		// The key lives on another reactor: go there and back. The
		// request stays out of the pool until it is back, whatever
		// happens to its flow meanwhile.
		if rq == self {
			rq.ext = as.External()
		}
		rq.hopping = true
		cn.hopsOut++
		rq.sh.sendHop(owner, rq)
	}
	cn.cursor = rq
}

func sleepDone(arg unsafe.Pointer, _ uint64) {
	rq := (*request)(arg)
	rq.timer = reactor.Timer{}
	rq.ext.Success()
}

// cancelSleep stops the timer of a SLEEP that timed out, so it cannot fire
// into the request's next life.
func cancelSleep(as *engine.Steps) {
	rq := requestOf(as)
	rq.sh.r.Stop(rq.timer)
	rq.timer = reactor.Timer{}
}

// sendHop queues rq for owner. The hops of one loop iteration leave
// together, one post per owner, and come back together: a pipelined batch
// costs each loop one wake-up, not one per request. The queue keeps
// arrival order, so requests for one key apply in the order they came.
func (sh *shard) sendHop(owner *shard, rq *request) {
	q := &sh.outbox[owner.idx]
	if q.tail == nil {
		q.head = rq
	} else {
		q.tail.hopNext = rq
	}
	q.tail = rq
	sh.schedule()
}

// hopQueue is a FIFO of requests linked by hopNext.
type hopQueue struct{ head, tail *request }

// sendHops posts each owner its batch.
func (sh *shard) sendHops() {
	for i := range sh.outbox {
		q := &sh.outbox[i]
		if q.head == nil {
			continue
		}
		head := q.head
		*q = hopQueue{}
		if !sh.s.shards[i].r.Post(hopThere, unsafe.Pointer(head), 0) {
			// The owner's reactor is closed (shutting down): fail them.
			for rq := head; rq != nil; {
				next := rq.hopNext
				rq.hopNext, rq.hopping = nil, false
				if rq.retired {
					sh.recycle(rq)
				} else {
					if !rq.done {
						rq.cn.hopsOut--
					}
					rq.ext.Error(engine.InternalError, "shard unavailable")
				}
				rq = next
			}
		}
	}
}

// hopThere runs on the keys' shard: it applies a batch, in order, and
// sends it back.
func hopThere(arg unsafe.Pointer, _ uint64) {
	head := (*request)(arg)
	owner := head.sh.s.shardOf(head.key)
	for rq := head; rq != nil; rq = rq.hopNext {
		owner.apply(rq)
	}
	head.sh.r.Post(hopBack, arg, 0) // false: the requests' reactor is closed, their flows gone
}

// hopBack runs on the requests' own shard again.
func hopBack(arg unsafe.Pointer, _ uint64) {
	for rq := (*request)(arg); rq != nil; {
		next := rq.hopNext
		rq.hopNext, rq.hopping = nil, false
		if rq.retired {
			rq.sh.recycle(rq)
		} else {
			if !rq.done {
				rq.cn.hopsOut--
			}
			rq.ext.Success()
		}
		rq = next
	}
}

// apply runs a key command on the shard that owns the key.
func (sh *shard) apply(rq *request) {
	switch rq.op {
	case OpGet:
		e, ok := sh.m[string(rq.key)]
		rq.found = ok
		if ok {
			rq.res = append(rq.res[:0], e.v...)
		}
	case OpSet:
		if e, ok := sh.m[string(rq.key)]; ok {
			e.v = append(e.v[:0], rq.val...)
		} else {
			sh.m[string(rq.key)] = &entry{v: append([]byte(nil), rq.val...)}
		}
	case OpDel:
		_, rq.found = sh.m[string(rq.key)]
		delete(sh.m, string(rq.key))
	}
}

// replyStep is every flow's last step: the reply is known. It is written
// by the shard's end-of-iteration task, once the other flows the same read
// started have run too.
func replyStep(as *engine.Steps) {
	rq := requestOf(as)
	cn := rq.cn
	rq.done = true
	cn.undone--
	if rq.hopping {
		cn.hopsOut-- // timed out away: no longer expected back soon
	}
	if cn.cursor == rq {
		cn.dispatchKeyed(nil, nil) // it failed before its turn: the next may go
	}
	if !cn.dirty {
		cn.dirty = true
		cn.sh.dirty = append(cn.sh.dirty, cn)
		cn.sh.schedule()
	}
}

// schedule posts the shard's end-of-iteration task, once per iteration.
func (sh *shard) schedule() {
	if !sh.posted {
		sh.posted = true
		sh.r.Post(endOfIteration, unsafe.Pointer(sh), 0)
	}
}

// endOfIteration runs after the flows that were ready in an iteration:
// hops leave in one batch per owner, and each connection with new replies
// writes them in one write(2).
func endOfIteration(arg unsafe.Pointer, _ uint64) {
	sh := (*shard)(arg)
	sh.posted = false
	sh.sendHops()
	d := sh.dirty
	for i, cn := range d {
		d[i] = nil
		cn.dirty = false
		cn.flush()
	}
	sh.dirty = d[:0]
}

// flush writes the replies at the head of the queue that are known. While
// every request still unanswered is only away on another shard, it waits:
// those come back within microseconds, and the whole pipelined batch then
// leaves in one write(2) instead of one per wave of hops. The flows of the
// requests it answers have ended (they ended in replyStep, before this
// task ran), so their requests go back to the pool at once.
func (cn *conn) flush() {
	if cn.undone > 0 && cn.undone == cn.hopsOut {
		return
	}
	sh := cn.sh
	wrote := false
	for rq := cn.head; rq != nil && rq.done; rq = cn.head {
		if !cn.closed {
			if rq.errCode != "" {
				sh.out = AppendError(sh.out[:0], rq.errCode, rq.errInfo)
			} else {
				r := Request{Op: rq.op, Text: rq.val}
				sh.out = AppendReply(sh.out[:0], &r, rq.res, rq.found)
			}
			_, _ = cn.c.Write(sh.out)
			wrote = true
		}
		cn.head = rq.next
		if cn.head == nil {
			cn.tail = nil
		}
		if cn.cursor == rq {
			cn.cursor = rq.next // not expected (it moved on in replyStep), but never left on a recycled request
		}
		cn.inflight--
		if rq.hopping {
			rq.retired = true // hopBack recycles it
		} else {
			sh.recycle(rq)
		}
	}
	if wrote {
		_ = cn.c.Flush()
	}
	if cn.paused && !cn.tooLong && cn.inflight <= cn.sh.s.cfg.MaxPipeline/2 {
		cn.paused = false
		cn.c.ResumeRead()
	}
	cn.maybeClose()
}

func (sh *shard) recycle(rq *request) {
	rq.cn, rq.done, rq.retired = nil, false, false
	rq.ready, rq.dispatched = false, false
	rq.errCode, rq.errInfo, rq.found = "", "", false
	rq.ext = engine.External{}
	rq.next = sh.free
	sh.free = rq
}
