package stepsd

import (
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reclaim"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// shard is one reactor's part of the server: its pooled requests and the
// connections with replies to write. Loop-owned. The keys are shared by
// every reactor (store).
type shard struct {
	s    *Server
	r    *reactor.Reactor
	idx  int
	lim  *syncprim.Limiter // this shard's requests' Limiter (newLimiters)
	free *request          // recycled requests
	// freeFlows: flows whose requests are all recycled (flow.go), with
	// freeFlowN and freeFlowLow as freeN and freeLow.
	freeFlows              *flow
	freeFlowN, freeFlowLow int
	cmds                   [numCmds]cmdCounts // per command: Metrics.Commands
	strays                 int                // steps run with no request left (strayStep): never expected
	wholeQueued            int                // whole reads whose flow Execute queued behind a ready flow (runWhole): rare

	// whole is the flow the last whole read ran in (runWhole), kept out
	// of freeFlows for the next: its root ended and not held back
	// (flow.atOnce), so a whole read skips the pool's pop and push and
	// newFlow's and wholeFlow's tests. nil while runWhole runs, and when
	// the flow went the general way (wholeFallback); one a shard, never
	// trimmed.
	whole *flow
	// freeN counts free; freeLow is its low-water mark since the last
	// trim: requests nobody took for a whole trimEvery go back to the GC
	// (trimRequests), so a burst does not keep its peak forever.
	freeN, freeLow int
	out            []byte    // reply scratch
	reqs           []Request // the head of a read parsed for a direct run (OnData, flow.startDirect, conn.runWhole); valid until its OnData returns
	reqsDirty      bool      // reqs may hold a parse: from parseDirect to the end of its OnData; only that OnData drops it (after clearing what it used)
	held           uint8     // the store stripe whose lock this loop holds, + 1 (stripe.lock); in reqsDirty's padding
	dout           []byte    // a direct run's replies, written by runNow (runWhole) before flush's
	parser         Parser    // parses every connection's input on this reactor, one request at a time

	inline *conn   // the connection whose runNow (runWhole) runs flows now: its replies are written there
	posted bool    // endOfIteration is posted
	dirty  []*conn // connections with replies to write at the end of the iteration

	whead, wtail *request // the deadline list: requests that wait, by deadline (deadline.go)
	sweepArmed   bool     // sweep's timer is set
	reqsTrimmed  int      // requests trimRequests gave back to the GC, in all: with freeN, every request made once none is in flight

	// The shards of a server are allocated one after the other, so two
	// reactors' shards are neighbours in memory; this line keeps the fields
	// above, written on every read (dirty, the deadline list), out of the
	// next shard's first line (s, r, idx, read on every request by the other
	// reactor), whatever the fields above add up to (today 752 bytes, 816
	// with this line, in 896-byte slots; without it they would hang on the
	// slack the size class happens to leave: profiles/notes/2026-11-27-sys-round6.md).
	_ [64]byte
}

func (s *Server) shardOn(r *reactor.Reactor) *shard {
	for _, sh := range s.shards {
		if sh.r == r {
			return sh
		}
	}
	return nil
}

// newRequest takes a pooled request, or makes one. A recycled request may
// still be its flow's current one while that flow ends (a canceled
// SLEEP's cancel handler reads it): it is taken only once its flow has let
// go of it.
func (sh *shard) newRequest() *request {
	if rq := sh.free; rq != nil && (rq.fl.cur != rq || !rq.fl.root.Executing()) {
		sh.free = rq.next
		rq.next = nil
		if sh.freeN--; sh.freeN < sh.freeLow {
			sh.freeLow = sh.freeN
		}
		return rq
	}
	return &request{sh: sh}
}

// schedule posts the shard's end-of-iteration task, once per iteration.
func (sh *shard) schedule() {
	if !sh.posted {
		sh.posted = true
		reactor.PostTo(sh.r, endOfIteration, sh, 0)
	}
}

// endOfIteration runs after the flows that were ready in an iteration:
// each connection with new replies writes them in one write(2).
func endOfIteration(sh *shard, _ uint64) {
	sh.posted = false
	d := sh.dirty
	now := sh.r.CoarseNow()
	for i, cn := range d {
		d[i] = nil
		cn.dirty = false
		cn.flush(now)
	}
	sh.dirty = d[:0]
}

func (sh *shard) recycle(rq *request) {
	sh.unwatch(rq) // not expected: answered requests left the list
	if rq.ready && !rq.dispatched {
		rq.cn.turnWaits-- // waited for its turn, then timed out or was abandoned
	}
	if fl := rq.fl; fl != nil {
		if fl.n--; fl.n == 0 {
			sh.recycleFlow(fl)
		}
	}
	rq.cn, rq.done = nil, false
	rq.key, rq.val = nil, nil // no reference to a read's bytes
	rq.ready, rq.dispatched = false, false
	rq.errCode, rq.errInfo, rq.n = "", "", 0
	rq.ext = engine.External{}
	rq.next = sh.free
	sh.free = rq
	sh.freeN++
}

// trimEvery is how often a shard drops the requests it kept unused.
const trimEvery = time.Second

// requestBytes is a pooled request's size, for reclaim.
const requestBytes = int(unsafe.Sizeof(request{}))

// trimRequests runs on the shard's loop every trimEvery: it drops the
// requests and flows that stayed in the free lists since the last trim
// (the lists are LIFO: they are at their ends), releasing the flows' roots
// to the engine, whose
// own pools shrink the same way, and tells reclaim what it gave up, so an
// idle server's memory goes back to the OS within seconds of a burst
// instead of at the runtime's forced GCs. A shard whose pool stayed in use
// does nothing but look.
func trimRequests(sh *shard, _ uint64) {
	if k := sh.freeLow; k > 0 {
		keep := sh.freeN - k
		var rest *request
		if keep == 0 {
			rest, sh.free = sh.free, nil
		} else {
			rq := sh.free
			for i := 1; i < keep; i++ {
				rq = rq.next
			}
			rest, rq.next = rq.next, nil
		}
		bytes := 0
		for rest != nil {
			next := rest.next
			rest.next = nil
			bytes += requestBytes + cap(rest.ownKey) + cap(rest.ownVal) + cap(rest.res)
			rest.fl = nil
			rest = next
		}
		sh.freeN = keep
		sh.reqsTrimmed += k
		reclaim.Dropped(bytes)
	}
	sh.freeLow = sh.freeN
	if k := sh.freeFlowLow; k > 0 {
		keep := sh.freeFlowN - k
		var rest *flow
		if keep == 0 {
			rest, sh.freeFlows = sh.freeFlows, nil
		} else {
			fl := sh.freeFlows
			for i := 1; i < keep; i++ {
				fl = fl.free
			}
			rest, fl.free = fl.free, nil
		}
		for rest != nil {
			next := rest.free
			rest.free = nil
			if !rest.root.Executing() {
				// Kept requests may still name rest as their flow:
				// with no cur, newRequest does not ask its released
				// root whether it runs. (One still ending, canceled,
				// keeps cur for its cancel handler; the guard then
				// reads a root released later.)
				rest.cur = nil
			}
			rest.root.ReleaseAtEnd() // a canceled flow may still be ending
			rest = next
		}
		sh.freeFlowN = keep
		reclaim.Dropped(k * flowBytes)
	}
	sh.freeFlowLow = sh.freeFlowN
	reactor.AfterTo(sh.r, trimEvery, trimRequests, sh, 0)
}

// flowBytes is a pooled flow's size, for reclaim (its root is the engine's).
const flowBytes = int(unsafe.Sizeof(flow{}))
