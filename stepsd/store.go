package stepsd

import (
	"encoding/binary"
	"sync"
)

// storeStripes is how many locks the key space is striped over: a power of
// two, so a hash picks one with a mask, and enough that two reactors
// rarely want the same lock at once.
const storeStripes = 1 << storeStripeBits

// storeStripeBits is log2(storeStripes).
const storeStripeBits = 6

// A loop's mark of the stripe it holds (stripe.lock) is the stripe's
// index + 1 in a byte.
const _ = uint8(storeStripes)

// store is the server's keys, shared by every reactor: a command on a key
// applies on its connection's reactor, under the key's stripe lock.
//
// Why not a shard per reactor with hops to the owner: a hop is a post to
// the other reactor and one back, and when that reactor sleeps (it does
// between batches) each costs an eventfd write and a thread wake-up, 3-5
// µs and a context switch apiece on 2 shared CPUs, against ~20 ns for an
// uncontended lock around a map operation. Measured in the load benchmark:
// one pipelining connection went from 0.2-0.5x to about 0.8x of a plain
// gnet handler (profiles/notes/README.md, "Cross-reactor hops").
type store struct {
	stripes [storeStripes]stripe
}

// stripe is one lock and the keys that hash to it. The padding keeps two
// stripes' locks off one cache line.
//
// A key is in at most one of its two maps: m holds the strings, t the
// other types (types.go). Two maps rather than a type in each entry keep
// SET's and GET's path as it was: a GET that finds its key in m and a SET
// of a key in m never look at t; only a miss does (a GET of a key of
// another type answers WRONGTYPE; a SET of one replaces it).
type stripe struct {
	mu   sync.Mutex
	m    map[string]*entry
	t    map[string]any // *list, *set, *hash, *zset or *stream
	mark uint8          // its index + 1: a loop's mark while it holds mu (lock)
	_    [39]byte       // to 64 bytes
}

// entry is a stored value; updated in place, so a SET of an existing key
// does not allocate.
type entry struct{ v []byte }

func newStore() *store {
	s := new(store)
	for i := range s.stripes {
		s.stripes[i].m = make(map[string]*entry)
		s.stripes[i].t = make(map[string]any)
		s.stripes[i].mark = uint8(i + 1)
	}
	return s
}

// stripeOf returns the stripe that holds key: KeyHash's top bits.
func (s *store) stripeOf(key []byte) *stripe {
	return &s.stripes[KeyHash(key)>>(64-storeStripeBits)]
}

// lock takes st's lock for the loop whose mark is held. The mark (the
// stripe's index + 1, 0 when none) says which lock the loop holds while it
// holds it, so that a panic in the critical section, which the engine
// recovers in the step's error handler, does not leave the lock held: the
// handler gives it back (unlockHeld). No defer per request: the mark, a
// byte store on each side, costs about 7 instructions a request by
// callgrind (profiles/notes/2026-11-27-review-p16-round8.md).
//
// Invariant: *held != 0 only between lock and unlock of one stripe, or
// after a panic between them until unlockHeld; a loop holds at most one
// stripe's lock at a time.
func (st *stripe) lock(held *uint8) {
	st.mu.Lock()
	*held = st.mark
}

// unlock gives back st's lock, which lock took with the mark held.
func (st *stripe) unlock(held *uint8) {
	*held = 0
	st.mu.Unlock()
}

// unlockHeld gives back the stripe lock that the mark held says is held:
// after a panic inside a critical section (never expected: a map operation
// and a copy). The error handlers of the steps that run the store's
// commands call it first, and so do the paths that run them outside a
// step (sweep) and each read's end (runNow), so that no later request on a
// key of the stripe blocks its loop.
func (s *store) unlockHeld(held *uint8) {
	if h := *held; h != 0 {
		*held = 0
		s.stripes[h-1].mu.Unlock()
	}
}

// KeyHash is the hash the server's store spreads keys over its locks by:
// the key eight bytes at a time, each word mixed in by a multiply, then a
// final mix, so that the top bits depend on every bit of the key (take a
// power-of-two share by shifting, not masking). A byte-at-a-time FNV-1a
// cost about 100 instructions a request for redis-benchmark's 16-byte
// keys (profiles/notes/2026-11-27-glue2-round5.md). Exported so that a
// server or benchmark peer with the same store shape pays the same for it.
func KeyHash(key []byte) uint64 {
	h := uint64(len(key)) * hashMul
	for len(key) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(key)) * hashMul
		key = key[8:]
	}
	if len(key) > 0 {
		var w uint64
		for i, c := range key {
			w |= uint64(c) << (8 * i)
		}
		h = (h ^ w) * hashMul
	}
	h ^= h >> 29
	return h * hashMul
}

// hashMul is an odd 64-bit constant with well-spread bits (the golden
// ratio's), for KeyHash's multiplies.
const hashMul = 0x9e3779b97f4a7c15

// apply runs a key command, from any reactor. The lock is held for one map
// operation and one copy of a value of at most Config.MaxBulk bytes (a DEL
// of several keys takes each key's lock in turn). held is the loop's mark
// (stripe.lock).
func (s *store) apply(rq *request, held *uint8) {
	if rq.op == OpDel {
		rq.n = 0
		if s.del(rq.key, held) {
			rq.n++
		}
		for more := rq.val; len(more) > 0; {
			l, k := binary.Uvarint(more)
			key := more[k : k+int(l)]
			more = more[k+int(l):]
			if s.del(key, held) {
				rq.n++
			}
		}
		return
	}
	st := s.stripeOf(rq.key)
	st.lock(held)
	switch rq.op {
	case OpGet:
		e, ok := st.m[string(rq.key)]
		rq.n = 0
		if ok {
			rq.n = 1
			rq.res = append(rq.res[:0], e.v...)
		} else if len(st.t) != 0 {
			st.getOther(rq)
		}
	case OpSet:
		if e, ok := st.m[string(rq.key)]; ok {
			e.v = append(e.v[:0], rq.val...)
		} else {
			st.setNew(rq.key, rq.val)
		}
	default:
		// A value type's command (types.go), under its key's lock
		// taken here as SET's: it gives the lock back. A default case
		// rather than a test before the switch (which cost SET and GET
		// 2-6 instructions more, by callgrind).
		s.applyData(st, rq, held)
		return
	}
	st.unlock(held)
}

// applyTo runs the key command of a parsed request, SET, GET or a DEL of
// one key (directly), and appends its reply to out: a direct run's
// (flow.startDirect), with no request object, the value of a GET copied
// into the reply under its lock rather than into the request. A method of
// the loop's shard, whose mark (stripe.lock) it sets: no argument more
// than before for the mark, on a direct run's path.
func (sh *shard) applyTo(p *Request, out []byte) []byte {
	s := sh.s.keys
	if p.Op == OpDel {
		if s.del(p.Key, &sh.held) {
			return appendInt(out, ':', 1)
		}
		return appendInt(out, ':', 0)
	}
	st := s.stripeOf(p.Key)
	st.lock(&sh.held)
	if p.Op == OpGet {
		if e, ok := st.m[string(p.Key)]; ok {
			out = appendBulk(out, e.v)
		} else {
			out = st.getMiss(sh, p.Key, out)
		}
	} else {
		if e, ok := st.m[string(p.Key)]; ok {
			e.v = append(e.v[:0], p.Value...)
		} else {
			st.setNew(p.Key, p.Value)
		}
		out = appendOK(out) // as AppendReply's: the same code as the peers'
	}
	st.unlock(&sh.held)
	return out
}

// del deletes key and reports whether it was there. held is the loop's
// mark (stripe.lock).
func (s *store) del(key []byte, held *uint8) bool {
	st := s.stripeOf(key)
	st.lock(held)
	_, ok := st.m[string(key)]
	if ok {
		delete(st.m, string(key))
	} else if _, ok = st.t[string(key)]; ok {
		delete(st.t, string(key))
	}
	st.unlock(held)
	return ok
}

// setNew stores a copy of val as the string key, which m does not hold:
// it replaces a value of another type the key may have, as Redis's SET.
// st's lock is held. Not inlined: it keeps the callers' SET of an
// existing key, their common case, as it was before the value types.
//
//go:noinline
func (st *stripe) setNew(key, val []byte) {
	if len(st.t) != 0 {
		delete(st.t, string(key))
	}
	st.m[string(key)] = &entry{v: append([]byte(nil), val...)}
}

// holdsOther reports whether key holds a value of a type other than
// string. st's lock is held.
func (st *stripe) holdsOther(key []byte) bool {
	_, ok := st.t[string(key)]
	return ok
}

// getOther is GET's reply when its key is not a string: WRONGTYPE if it
// holds another type, else nil (rq.n 0). st's lock is held.
//
//go:noinline
func (st *stripe) getOther(rq *request) {
	if st.holdsOther(rq.key) {
		rq.fail(errCodeWrongType, errWrongType)
	}
}

// getMiss appends the reply of a direct run's GET of a key that is not a
// string: nil, or WRONGTYPE (counted failed: the direct run counts it
// ended) if it holds another type. st's lock is held. Not inlined: the
// test of the other map, inlined, cost applyTo's SET and GET of an
// existing key 2 instructions more each (callgrind), by the registers it
// took.
//
//go:noinline
func (st *stripe) getMiss(sh *shard, key, out []byte) []byte {
	if len(st.t) != 0 && st.holdsOther(key) {
		sh.cmds[OpGet].failed++
		return AppendError(out, errCodeWrongType, errWrongType)
	}
	return appendNil(out)
}
