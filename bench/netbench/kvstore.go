package netbench

import (
	"sync"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

// This file holds what the RESP peers (gnetpeer.go, netpeer.go) share
// beside stepsd's parser and reply formatting: the key-value store and the
// protocol limits. The store keeps strings only: stepsd's other value
// types are not the peers' (doc.go). It is what a plain Go server would write, a map behind
// a mutex, sharded by key hash so that two event loops (or many connection
// goroutines) rarely wait for the same lock.

// limits are the peers' protocol limits: stepsd's defaults, so that a
// request over one is a protocol error on every server alike.
var limits = stepsd.DefaultLimits()

// storeShards is a power of two, so that a hash picks a shard by its top
// bits.
const storeShards = 1 << storeShardBits

// storeShardBits is log2(storeShards).
const storeShardBits = 6

// store is a map from key to value, safe for concurrent use.
type store struct {
	shards [storeShards]storeShard
}

// storeShard is one lock and the keys that hash to it. The padding keeps
// two shards' mutexes off one cache line, so that loops locking different
// shards do not contend for it.
type storeShard struct {
	mu sync.Mutex
	m  map[string]*[]byte // a value is a pointer so that SET can overwrite it in place
	_  [48]byte           // to 64 bytes
}

func newStore() *store {
	s := new(store)
	for i := range s.shards {
		s.shards[i].m = make(map[string]*[]byte)
	}
	return s
}

// shard picks key's shard by stepsd.KeyHash, as stepsd's store picks its
// lock, so that the two servers pay the same for it and the comparison
// measures the rest.
func (s *store) shard(key []byte) *storeShard {
	return &s.shards[stepsd.KeyHash(key)>>(64-storeShardBits)]
}

// set stores a copy of value. Overwriting a key reuses its value's memory
// (the lookup by string(key) does not allocate), so a load that cycles over
// a fixed set of keys allocates nothing once every key exists.
func (s *store) set(key, value []byte) {
	sh := s.shard(key)
	sh.mu.Lock()
	if v, ok := sh.m[string(key)]; ok {
		*v = append((*v)[:0], value...)
	} else {
		v := append([]byte(nil), value...)
		sh.m[string(key)] = &v
	}
	sh.mu.Unlock()
}

// appendGetReply appends GET's reply to dst, formatted while the lock is
// held, so the value is copied once, straight into dst.
func (s *store) appendGetReply(dst []byte, req *stepsd.Request) []byte {
	sh := s.shard(req.Key)
	sh.mu.Lock()
	var value []byte
	v, found := sh.m[string(req.Key)]
	n := 0
	if found {
		value, n = *v, 1
	}
	dst = stepsd.AppendReply(dst, req, value, n)
	sh.mu.Unlock()
	return dst
}

// del removes key and reports whether it was there.
func (s *store) del(key []byte) bool {
	sh := s.shard(key)
	sh.mu.Lock()
	_, ok := sh.m[string(key)]
	if ok {
		delete(sh.m, string(key))
	}
	sh.mu.Unlock()
	return ok
}

// appendReply serves one parsed request other than SLEEP (which each peer
// schedules its own way) and appends its reply to dst, formatted by stepsd
// so that every server's bytes on the wire are the same.
func (s *store) appendReply(dst []byte, req *stepsd.Request) []byte {
	if req.Bad != "" {
		return stepsd.AppendBad(dst, req.Bad, req.Name())
	}
	switch req.Op {
	case stepsd.OpSet:
		s.set(req.Key, req.Value)
	case stepsd.OpGet:
		return s.appendGetReply(dst, req)
	case stepsd.OpDel:
		n := 0
		for _, k := range req.Args[1:] {
			if s.del(k) {
				n++
			}
		}
		return stepsd.AppendReply(dst, req, nil, n)
	}
	return stepsd.AppendReply(dst, req, nil, 0)
}

// appendProtocolError appends the reply to a request Parser could not
// frame: the connection closes after it.
func appendProtocolError(dst []byte, fatal string) []byte {
	return stepsd.AppendError(dst, "ERR", fatal)
}
