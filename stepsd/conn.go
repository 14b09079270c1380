package stepsd

import (
	"encoding/binary"
	"math/bits"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/netio"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// conn is a connection's protocol state. Loop-owned.
type conn struct {
	c          *netio.Conn
	sh         *shard
	head, tail *request // in flight, in arrival order: replies leave in this order
	inflight   int      // requests not yet answered
	undone     int      // of those, the ones whose reply is not known yet
	held       int      // bytes of keys and values the requests in flight hold
	paused     bool     // stopped reading at MaxPipeline or MaxRequest bytes held
	eof        bool     // no more requests will come
	closing    bool     // a protocol error or QUIT: close once the earlier replies are out
	closeMsg   string   // the protocol error to answer before closing ("" after QUIT)
	closed     bool
	dirty      bool     // in the shard's dirty list
	cursor     *request // the first request whose key command may not have gone yet (see dispatchKeyed)
	turnWaits  int      // key commands that ran (ready) and wait for their turn: execStep's fast path needs none
}

// handler implements netio.Handler for the server.
type handler Server

func (h *handler) OnOpen(c *netio.Conn) {
	s := (*Server)(h)
	c.SetContext(&conn{c: c, sh: s.shardOn(c.Reactor())})
}

func (h *handler) OnData(c *netio.Conn, data []byte) int {
	cn := c.Context().(*conn)
	if cn.head != nil || cn.closing {
		return cn.readAll(data, 0, 0, 0, 0, 0, 0, 0, true, false)
	}
	// Nothing of cn is in flight, so the head of this read may be
	// answered straight from its parse (flow.startDirect).
	n, nd, ne, pk, used, cmds, more := cn.parseDirect(data)
	g := 0 // the direct head's Limiter entries granted (startDirect)
	if ne > 0 {
		g = cn.sh.lim.TryEnterRun(ne)
	}
	if g == ne && g > 0 && pk == 0 && !more {
		// The whole read is the direct head, and every request in it
		// entered the Limiter: what a pipelining client's read is
		// (runWhole, which clears the slots).
		cn.runWhole(nd, cmds)
		return n
	}
	return cn.readAll(data, n, nd, ne, pk, used, g, cmds, more, true)
}

// readAll is OnData for every read that runWhole does not take: direct
// says whether the read had a direct head (parseDirect's results n to
// more, and g, the Limiter entries granted to it), else it parses data
// from its start. A function of its own, so that the reads runWhole takes
// (what a pipelining client sends) do not pay for this one's frame and
// its values kept across calls: 35-50 instructions a read
// (profiles/notes/2026-11-27-srv-round9.md).
func (cn *conn) readAll(data []byte, n, nd, ne, pk, used, g int, cmds uint32, more, direct bool) int {
	sh := cn.sh
	var first *request // the first request this read started
	var fl *flow       // the read's flow: its requests' steps, in order
	var now int64      // the read's arrival, on the reactor's coarse clock
	if direct {
		if nd > 0 || pk > 0 {
			fl = sh.newFlow()
			now = sh.r.CoarseNow()
		}
		if nd > 0 {
			first = fl.startDirect(cn, nd, ne, g, cmds, now)
		}
		if pk > 0 {
			// The request that ended the direct head, parsed already.
			p := &sh.reqs[nd]
			n += pk
			first = cn.startOne(p, true, fl, now, first)
		}
	}
	if more && !cn.closing {
		n, first, fl, now = cn.readRest(data, n, first, fl, now)
	}
	if fl != nil {
		fl.execute(true)
		cn.runNow(first, fl, now)
	}
	if direct {
		// No reference to the read's bytes is kept (as recycle drops a
		// request's): a netio input buffer may be one of up to
		// MaxRequest bytes. And the next direct head parses into zeroed
		// slots (parseDirect). Only a read that ran parseDirect (which
		// cleared every slot if the flag was set) may drop the flag: a
		// read without a direct head cleared nothing.
		zeroSlots(sh.reqs[:used])
		sh.reqsDirty = false
	}
	return n
}

// readRest is OnData's general loop: it parses and starts the requests
// of data from n on that a direct head did not take, each as a request
// object of the read's flow fl (made at the first, with now), until the
// read's end, a partial request, a protocol error, QUIT or MaxPipeline.
// Its own function, so that a read all answered by its direct head (what
// a pipelining client sends) does not pay for its frame: its Request
// alone, zeroed on entry, was about 110 instructions a read.
func (cn *conn) readRest(data []byte, n int, first *request, fl *flow, now int64) (int, *request, *flow, int64) {
	sh, c, cfg := cn.sh, cn.c, &cn.sh.s.cfg
	var req Request // each request in turn: start copies what it keeps
	for !cn.closing {
		if cn.inflight >= cfg.MaxPipeline || cn.held >= cfg.MaxRequest {
			cn.paused = true
			c.PauseRead()
			break
		}
		// A multi-bulk request's words alias data; an inline one's may be
		// in the parser's scratch, which the next Parse reuses.
		framed := n < len(data) && data[n] == '*'
		k, fatal := sh.parser.ParseInto(&req, data[n:])
		if fatal != "" {
			cn.closeAfterReplies(fatal)
			break
		}
		if k == 0 {
			break // the rest of a request is still to come
		}
		n += k
		if req.Op == OpNone {
			continue
		}
		if fl == nil {
			fl = sh.newFlow()
			now = sh.r.CoarseNow()
		}
		first = cn.startOne(&req, framed, fl, now, first)
	}
	return n, first, fl, now
}

// startOne starts the parsed request p as a request of the read's flow fl
// (cn.start), closes after it if it is QUIT, and returns the read's first
// request started: first, or p's if first is nil.
func (cn *conn) startOne(p *Request, framed bool, fl *flow, now int64, first *request) *request {
	rq := cn.start(p, framed, fl, now)
	if p.Op == OpQuit && p.Bad == "" {
		cn.closeAfterReplies("")
	}
	if first == nil {
		return rq
	}
	return first
}

// parseDirect parses the head of a read on a connection with nothing in
// flight into the shard's reqs while each request may be answered by a
// direct run (directly), and stops before the first that may not, at a
// protocol error (readRest parses it again and closes), at
// MaxPipeline or MaxRequest (readRest pauses), at an inline
// command (readRest parses it) or at the end of what is complete.
//
// It returns n, the bytes of the nd requests of the direct head (and of
// the empty ones among them); ne, how many of those need a Limiter entry
// (the refused ones need none); cmds, their counters' indexes as a bit set
// (directName); used, the slots of reqs it parsed into; and more, whether
// the read has more to parse. pk > 0: the request that ended the head is
// a framed one, parsed into reqs[nd], pk bytes long and not yet in n
// (OnData starts it).
//
// Its own loop, apart from readRest: the direct head is what a pipelining
// client sends, and a loop that keeps only its own state in registers
// costs about half of that general one per request
// (profiles/notes/2026-11-27-srv-round7.md). No counter is touched here:
// the run step counts each request it answers as started and ended at
// once (runDirectOf), in the same OnData; startDirect's request objects
// count themselves (start).
func (cn *conn) parseDirect(data []byte) (n, nd, ne, pk, used int, cmds uint32, more bool) {
	sh := cn.sh
	if sh.reqsDirty {
		// Never expected: an OnData that panicked after a parse (its
		// slots were not cleared). The parser's limits are not tested
		// here: Start sets them when it makes the shard, from a Config
		// nothing changes afterwards
		// (TestDirectHeadKeepsConfiguredLimits).
		clear(sh.reqs)
	}
	sh.reqsDirty = true // until OnData clears the slots used
	if cn.held >= sh.s.cfg.MaxRequest {
		return 0, 0, 0, 0, 0, 0, true // readRest pauses
	}
	room := max(sh.s.cfg.MaxPipeline-cn.inflight, 0)
	ps := &sh.parser
	buf := data // what is left to parse: n is len(data) - len(buf)
	// The loop keeps little across its call of the parse (every register
	// is the callee's in Go's ABI, so each value live across it is
	// reloaded each time): the rest of the read, the slots, the count,
	// the commands' bits. The slots' bound is room's and theirs in one
	// (reqs is cut to it; it grows below), a refused request is counted
	// after the loop, and a DEL is left to directOther.
	for {
		reqs := sh.reqs
		if len(reqs) > room {
			reqs = reqs[:room]
		}
		for nd < len(reqs) {
			if len(buf) == 0 || buf[0] != '*' {
				goto end
			}
			// Parsed into a zeroed slot (the slots are zero: OnData
			// clears those it used, reqsDirty above): ParseZeroed,
			// the parse the peers in the bench module use too,
			// without ParseInto's clear.
			p := &reqs[nd]
			k, fatal := ps.ParseZeroed(p, buf)
			if k == 0 || fatal != "" {
				more = fatal != "" // the rest of a request is still to come, or a protocol error readRest answers
				n = len(data) - len(buf)
				goto counted
			}
			if p.Op == OpNone {
				buf = buf[k:] // nothing parsed into the slot: "*0" and "*-1"
				continue
			}
			c := int(p.Op) // directly, its counters' index (cmdIndex): inline
			if p.Bad != "" || !directOps[p.Op] {
				if c = directOther(p); c < 0 {
					pk, more = k, true
					n = len(data) - len(buf)
					nd++ // for used; taken back below
					goto counted
				}
			}
			buf = buf[k:]
			cmds |= 1 << (uint(c) & 31)
			nd++
		}
		if nd >= room {
			break
		}
		// Every slot is used: more (at least the one the next request
		// needs; a pipeline's depth is what the last read brought).
		sh.reqs = append(sh.reqs, Request{})
		sh.reqs = sh.reqs[:cap(sh.reqs)]
	}
end:
	n = len(data) - len(buf)
	more = nd >= room || len(buf) > 0
counted:
	used = nd
	if pk > 0 {
		nd--
	}
	ne = nd
	if cmds&(1<<cmdInvalid) != 0 {
		// Refused requests need no Limiter entry (badStep's): rare,
		// counted here rather than in the loop.
		for i := range nd {
			if sh.reqs[i].Bad != "" {
				ne--
			}
		}
	}
	return n, nd, ne, pk, used, cmds, more
}

// directOps are the commands a direct run may answer (directly) that
// parseDirect takes inline; DEL (one key only) is left to directOther.
var directOps = [256]bool{OpGet: true, OpSet: true, OpEcho: true, OpPing: true}

// directOther is directly for a framed request that parseDirect's inline
// test does not take: its counters' index (cmdInvalid for a refused one a
// direct run answers), or -1.
//
//go:noinline
func directOther(p *Request) int {
	if directly(p, true) {
		return cmdIndex(p.Op, p.Bad)
	}
	return -1
}

// directName is the name of a direct run whose requests' counters'
// indexes are the bits of cmds: their command's, or PIPELINE when they
// differ.
func directName(cmds uint32) *engine.Name {
	if cmds&(cmds-1) != 0 {
		return pipelineName
	}
	return cmdNames[bits.TrailingZeros32(cmds)]
}

// runNow runs the read's flow fl, now rather than later in the loop's
// iteration, and writes the replies it produced in one write, before the
// loop reads the next connection: the client has its replies (and sends
// its next requests) while the server serves the others, as a plain
// event-loop handler does. Requests that wait (SLEEP, a full Limiter)
// answer later through the shard's end-of-iteration flush, as before.
//
// When the flow stops at a request that waits with requests of the read
// still to run, each of those goes on in a flow of its own (split), at
// once: a request never waits behind another one of its read that has not
// finished, except for its reply (replies leave in order) and, for a key
// command, its turn (key commands apply in order); and every request that
// waits is alone in its flow, so canceling that flow (Timeout, a reset)
// cancels it alone.
//
// The requests from first on that are still unanswered then wait: they go
// on the shard's deadline list.
func (cn *conn) runNow(first *request, fl *flow, now int64) {
	sh := cn.sh
	sh.inline = cn
	if engine.RunReady(sh.r); fl.next != nil || fl.last != nil && !fl.last.done {
		// fl waits at a request (or, past the engine's turn budget of
		// 4,096 steps, is queued to go on later): the requests behind
		// it go on in flows of their own.
		fl.splitRest()
		engine.RunReady(sh.r)
	}
	cn.afterRun(first, fl, now)
}

// afterRun is runNow's end, once the read's flows have run as far as they
// could: it writes their replies and puts what is left to wait.
func (cn *conn) afterRun(first *request, fl *flow, now int64) {
	sh := cn.sh
	sh.inline = nil
	if sh.held != 0 {
		// Never expected: a panic inside the store's lock (stripe.lock)
		// in a step's own error handler, which the engine recovered.
		sh.s.keys.unlockHeld(&sh.held)
	}
	if cn.undone > 0 {
		// Not every request of this read is answered: flush will leave
		// some in the queue, whose key and text must outlive the read.
		for rq := first; rq != nil; rq = rq.next {
			rq.own()
		}
		sh.watch(first)
	}
	// The run's replies come first. Written after own: a write that
	// fails ends the connection, and netio gives the read's bytes back.
	direct := fl.dn > 0
	if direct {
		fl.sendDirect()
	}
	if direct && cn.head == nil && !cn.paused && !cn.closing && !cn.eof {
		// All of the read answered by its direct run, and nothing for
		// flush to resume or close: what a pipelining client's read
		// is. flush would find nothing to do (about 50 instructions a
		// read).
		return
	}
	if direct || cn.head != nil && cn.head.done {
		cn.flush(now) // the read's loop round: its coarse clock has not moved. After a direct run: resumes reading, closes if asked
	}
}

func (h *handler) OnEOF(c *netio.Conn) {
	cn := c.Context().(*conn)
	cn.eof = true
	cn.maybeClose()
}

// OnClose cancels the flows of the requests still in flight: nobody is
// left to answer (the peer reset the connection, or it was closed on our
// side), so their cancel handlers run and their Limiter slots return at
// once instead of when the requests end or time out. After a plain
// half-close the connection stays open until every reply is written, so a
// request is canceled here only when its reply can no longer be delivered.
func (h *handler) OnClose(c *netio.Conn, _ error) {
	cn := c.Context().(*conn)
	cn.closed = true
	if cn.sh.inline == cn {
		// Never expected: no step writes (runNow writes its read's
		// replies after its flows ran), so the read's bytes, which its
		// requests borrow, are never given back under them. Counted.
		cn.sh.strays++
	}
	if cn.undone == 0 {
		return
	}
	for rq := cn.head; rq != nil; rq = rq.next {
		if !rq.done {
			rq.fl.root.Cancel() // posted: runs before abandon below. Its flow's only unfinished request (runNow, split)
		}
	}
	reactor.PostTo(cn.sh.r, abandon, cn, 0)
}

// abandon runs after the cancels OnClose posted: the requests whose flows
// they ended will never be answered, so they are given back here.
func abandon(cn *conn, _ uint64) {
	for rq := cn.head; rq != nil; rq = rq.next {
		if !rq.done {
			rq.done = true
			cn.sh.cmds[rq.cmd].canceled++
			cn.undone--
			cn.sh.unwatch(rq)
		}
	}
	cn.flush(cn.sh.r.CoarseNow())
}

// closeAfterReplies stops reading; the connection closes, with msg as an
// error reply if not empty, once the requests before it are answered.
func (cn *conn) closeAfterReplies(msg string) {
	if msg != "" {
		cn.sh.s.protocolErrors.Add(1)
	}
	cn.closing, cn.closeMsg = true, msg
	cn.c.PauseRead()
	cn.maybeClose()
}

func (cn *conn) maybeClose() {
	if cn.inflight > 0 || cn.closed {
		return
	}
	if cn.closeMsg != "" {
		cn.sh.out = AppendError(cn.sh.out[:0], "ERR", cn.closeMsg)
		_, _ = cn.c.Write(cn.sh.out)
	}
	if cn.closing || cn.eof {
		_ = cn.c.Close()
	}
}

// start queues req on the connection as a request of the read's flow fl.
// When framed (a multi-bulk request), its key and text stay in the read's
// bytes (borrowed): most requests are answered and written before OnData
// returns (runNow), and only those still in the queue then copy them
// (own). An inline request's words may be in the parser's scratch and a
// connection command's reply is composed in the parser (both reused by
// the next Parse): those are copied at once. A DEL's further keys are
// encoded into the request's own buffer. A value type command's words after
// its key are in its Text, encoded by the parser: copied at once, as a
// connection command's reply (OpConst and the value types' ops are the
// ops from OpConst up but QUIT, which has neither).
func (cn *conn) start(req *Request, framed bool, fl *flow, now int64) *request {
	rq := cn.sh.newRequest()
	rq.cn = cn
	rq.op, rq.bad, rq.ms = req.Op, req.Bad, req.Ms
	rq.at = now
	rq.borrowed = true
	rq.val = nil
	switch {
	case req.Bad != "":
		rq.key = req.Name() // for the error reply
		if req.Args == nil {
			rq.key = req.Key // a direct head's: directly kept its name there
		}
	case req.Op == OpDel:
		rq.key = req.Key
		if len(req.Args) > 2 {
			v := rq.ownVal[:0]
			for _, k := range req.Args[2:] { // more keys, each after its length
				v = binary.AppendUvarint(v, uint64(len(k)))
				v = append(v, k...)
			}
			rq.ownVal, rq.val = v, v
		}
	default:
		rq.key = req.Key
		if req.Op == OpSet {
			rq.val = req.Value
		} else {
			rq.val = req.Text
		}
	}
	if !framed || req.Op >= OpConst {
		rq.own()
	}
	rq.held = len(rq.key) + len(rq.val)
	cn.held += rq.held
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
	rq.cmd = uint8(cmdIndex(rq.op, rq.bad))
	cn.sh.cmds[rq.cmd].started++
	fl.add(rq, cmdNames[rq.cmd])
	return rq
}

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
		rq.sh.s.keys.apply(rq, &rq.sh.held)
		rq.answered()
		if rq != self {
			cn.turnWaits-- // it waited (execStep counted it)
			rq.resume()
		}
	}
	cn.cursor = rq
}

// outChunk is how many bytes of replies flush gathers before it queues
// them on the connection.
const outChunk = 64 << 10

// flush writes the replies at the head of the queue that are known. Their
// requests go back to the pool at once: a flow answers as its last act, and
// newRequest reuses a request only once its flow has let go of it. now is
// the reactor's coarse clock (reactor.CoarseNow), for the requests' life.
func (cn *conn) flush(now int64) {
	sh := cn.sh
	out := sh.out[:0]
	for rq := cn.head; rq != nil && rq.done; rq = cn.head {
		c := &sh.cmds[rq.cmd]
		c.ended++ // and failed or canceled where they are (rare): readCommands works out succeeded
		c.nanos += now - rq.at
		if !cn.closed {
			switch {
			case rq.bad != "" && rq.errCode == engine.InvalidRequest:
				out = AppendBad(out, rq.bad, rq.key)
			case rq.errCode != "":
				out = AppendError(out, rq.errCode, rq.errInfo)
			default:
				out = appendReply(out, rq.op, rq.val, rq.res, rq.n)
			}
			if len(out) >= outChunk {
				// Sent a chunk at a time: the scratch stays small
				// whatever MaxPipeline × MaxLine is.
				_, _ = cn.c.Send(out)
				out = out[:0]
			}
		}
		cn.head = rq.next
		if cn.head == nil {
			cn.tail = nil
		}
		if cn.cursor == rq {
			cn.cursor = rq.next // not expected (it moved on when it was answered), but never left on a recycled request
		}
		cn.inflight--
		cn.held -= rq.held
		sh.recycle(rq)
	}
	if len(out) > 0 {
		// One write(2) for the batch, from the scratch: netio copies
		// only what the socket does not take.
		_, _ = cn.c.Send(out)
	}
	sh.out = out
	if cn.paused && !cn.closing && cn.inflight <= cn.sh.s.cfg.MaxPipeline/2 && cn.held <= cn.sh.s.cfg.MaxRequest/2 {
		cn.paused = false
		cn.c.ResumeRead()
	}
	cn.maybeClose()
}
