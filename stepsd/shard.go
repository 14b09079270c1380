package stepsd

import (
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/gcepoch"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// shard is one reactor's part of the server: its keys and its pooled
// requests. Loop-owned.
type shard struct {
	s    *Server
	r    *reactor.Reactor
	idx  int
	m    map[string]*entry // the keys that hash to this shard
	free *request          // recycled requests
	// freeN counts free; freeLow is its low-water mark since the last
	// trim: requests nobody took for a whole GC cycle go back to the GC
	// (trimRequests), so a burst does not keep its peak forever.
	freeN, freeLow int
	trimEpoch      uint64
	out            []byte // reply scratch

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

func (sh *shard) newRequest() *request {
	if rq := sh.free; rq != nil && !rq.root.Executing() {
		sh.free = rq.next
		rq.next = nil
		if sh.freeN--; sh.freeN < sh.freeLow {
			sh.freeLow = sh.freeN
		}
		return rq
	}
	rq := &request{sh: sh, root: engine.New(sh.r)}
	rq.root.State().User = rq
	return rq
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
		if !reactor.PostTo(sh.s.shards[i].r, hopThere, head, 0) {
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
func hopThere(head *request, _ uint64) {
	owner := head.sh.s.shardOf(head.key)
	for rq := head; rq != nil; rq = rq.hopNext {
		owner.apply(rq)
	}
	reactor.PostTo(head.sh.r, hopBack, head, 0) // false: the requests' reactor is closed, their flows gone
}

// hopBack runs on the requests' own shard again.
func hopBack(head *request, _ uint64) {
	for rq := head; rq != nil; {
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

// schedule posts the shard's end-of-iteration task, once per iteration.
func (sh *shard) schedule() {
	if !sh.posted {
		sh.posted = true
		reactor.PostTo(sh.r, endOfIteration, sh, 0)
	}
}

// endOfIteration runs after the flows that were ready in an iteration:
// hops leave in one batch per owner, and each connection with new replies
// writes them in one write(2).
func endOfIteration(sh *shard, _ uint64) {
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

func (sh *shard) recycle(rq *request) {
	rq.cn, rq.done, rq.retired = nil, false, false
	rq.ready, rq.dispatched = false, false
	rq.errCode, rq.errInfo, rq.found = "", "", false
	rq.ext = engine.External{}
	rq.next = sh.free
	sh.free = rq
	sh.freeN++
}

// trimEvery is how often a shard looks for a new GC cycle to trim at.
const trimEvery = time.Second

// trimRequests runs on the shard's loop every trimEvery: once per GC cycle
// it drops the requests that stayed in the free list since the last trim
// (the list is LIFO: they are at its end), releasing their roots to the
// engine, whose own pools shrink the same way.
func trimRequests(sh *shard, _ uint64) {
	if ep := gcepoch.Epoch(); ep != sh.trimEpoch {
		sh.trimEpoch = ep
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
			for rest != nil {
				next := rest.next
				rest.next = nil
				rest.root.ReleaseAtEnd() // a canceled flow may still be ending
				rest = next
			}
			sh.freeN = keep
		}
		sh.freeLow = sh.freeN
	}
	reactor.AfterTo(sh.r, trimEvery, trimRequests, sh, 0)
}
