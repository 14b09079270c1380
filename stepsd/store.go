package stepsd

import (
	"encoding/binary"
	"sync"
)

// storeStripes is how many locks the key space is striped over: a power of
// two, so a hash picks one with a mask, and enough that two reactors
// rarely want the same lock at once.
const storeStripes = 64

// store is the server's keys, shared by every reactor: a command on a key
// applies on its connection's reactor, under the key's stripe lock.
//
// Why not a shard per reactor with hops to the owner: a hop is a post to
// the other reactor and one back, and when that reactor sleeps (it does
// between batches) each costs an eventfd write and a thread wake-up, 3-5
// µs and a context switch apiece on 2 shared CPUs, against ~20 ns for an
// uncontended lock around a map operation. Measured in the load benchmark:
// one pipelining connection went from 0.2-0.5x to about 0.8x of a plain
// gnet handler (profiles/README.md, "Cross-reactor hops").
type store struct {
	stripes [storeStripes]stripe
}

// stripe is one lock and the keys that hash to it. The padding keeps two
// stripes' locks off one cache line.
type stripe struct {
	mu sync.Mutex
	m  map[string]*entry
	_  [48]byte // to 64 bytes
}

// entry is a stored value; updated in place, so a SET of an existing key
// does not allocate.
type entry struct{ v []byte }

func newStore() *store {
	s := new(store)
	for i := range s.stripes {
		s.stripes[i].m = make(map[string]*entry)
	}
	return s
}

// stripeOf returns the stripe that holds key (FNV-1a).
func (s *store) stripeOf(key []byte) *stripe {
	h := uint32(2166136261)
	for _, c := range key {
		h = (h ^ uint32(c)) * 16777619
	}
	return &s.stripes[h&(storeStripes-1)]
}

// apply runs a key command, from any reactor. The lock is held for one map
// operation and one copy of a value of at most Config.MaxBulk bytes (a DEL
// of several keys takes each key's lock in turn).
func (s *store) apply(rq *request) {
	if rq.op == OpDel {
		rq.n = 0
		if s.del(rq.key) {
			rq.n++
		}
		for more := rq.val; len(more) > 0; {
			l, k := binary.Uvarint(more)
			key := more[k : k+int(l)]
			more = more[k+int(l):]
			if s.del(key) {
				rq.n++
			}
		}
		return
	}
	st := s.stripeOf(rq.key)
	st.mu.Lock()
	switch rq.op {
	case OpGet:
		e, ok := st.m[string(rq.key)]
		rq.n = 0
		if ok {
			rq.n = 1
			rq.res = append(rq.res[:0], e.v...)
		}
	case OpSet:
		if e, ok := st.m[string(rq.key)]; ok {
			e.v = append(e.v[:0], rq.val...)
		} else {
			st.m[string(rq.key)] = &entry{v: append([]byte(nil), rq.val...)}
		}
	}
	st.mu.Unlock()
}

// del deletes key and reports whether it was there.
func (s *store) del(key []byte) bool {
	st := s.stripeOf(key)
	st.mu.Lock()
	_, ok := st.m[string(key)]
	if ok {
		delete(st.m, string(key))
	}
	st.mu.Unlock()
	return ok
}
