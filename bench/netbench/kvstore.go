package netbench

import (
	"sync"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

// This file holds what the line-protocol peers (gnetpeer.go, netpeer.go)
// share beside stepsd's parser: the key-value store and the line limit. It
// is what a plain Go server would write, a map behind a mutex, sharded by
// key hash so that two event loops (or many connection goroutines) rarely
// wait for the same lock.

// MaxLine is the longest request line the peers accept, its "\n"
// included. It is stepsd's default Config.MaxLine, counted the same way,
// and a longer line is answered the same way: ERR InvalidRequest line too
// long, after the replies to the lines before it, and the connection
// closes. As soon as MaxLine bytes hold no "\n", the line is too long.
const MaxLine = 4096

// infoTooLong is the info of the ERR reply to a line too long.
const infoTooLong = "line too long"

// storeShards is a power of two, so that a hash picks a shard with a mask.
const storeShards = 64

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

// shard picks key's shard by FNV-1a.
func (s *store) shard(key []byte) *storeShard {
	h := uint32(2166136261)
	for _, c := range key {
		h = (h ^ uint32(c)) * 16777619
	}
	return &s.shards[h&(storeShards-1)]
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
	if found {
		value = *v
	}
	dst = stepsd.AppendReply(dst, req, value, found)
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
	switch req.Op {
	case stepsd.OpSet:
		s.set(req.Key, req.Value)
	case stepsd.OpGet:
		return s.appendGetReply(dst, req)
	case stepsd.OpDel:
		return stepsd.AppendReply(dst, req, nil, s.del(req.Key))
	}
	return stepsd.AppendReply(dst, req, nil, true)
}

// appendInvalid appends the reply to a line stepsd.Parse rejected.
func appendInvalid(dst []byte, info string) []byte {
	return stepsd.AppendError(dst, codeInvalidRequest, info)
}

// codeInvalidRequest is the FutoIn error code of a malformed request.
const codeInvalidRequest = "InvalidRequest"
