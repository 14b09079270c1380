package stepsd

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file is the store's value types beyond strings, with their
// commands (datacmd.go names them): lists, sets, hashes, sorted sets and
// streams, as Redis has them, and the string commands beyond SET and GET.
// A command applies under its key's stripe lock (a multi-key one, MSET or
// MGET, takes each key's lock in turn, as DEL: it is not atomic across
// keys, where Redis's is) and composes its whole reply in the request
// (request.res), which flush writes as it is.
//
// Replies and errors are Redis 7.0's, byte for byte
// (TestTypesAsRedis compares them with a redis-server's where one is
// installed), but for the order of a set's or a hash's members, which
// Redis leaves unspecified too.

// Redis's error replies of the value types' commands.
const (
	errCodeWrongType = "WRONGTYPE"
	errWrongType     = "Operation against a key holding the wrong kind of value"
	errNotInt        = "value is not an integer or out of range"
	errOverflow      = "increment or decrement would overflow"
	errDecrOverflow  = "decrement would overflow"
	errNotPositive   = "value is out of range, must be positive"
	errNotFloat      = "value is not a valid float"
	errStreamID      = "Invalid stream ID specified as stream command argument"
	errStreamSmaller = "The ID specified in XADD is equal or smaller than the target stream top item"
	errStreamZero    = "The ID specified in XADD must be greater than 0-0"
	errStreamFull    = "The stream has exhausted the last possible ID, unable to add more items"
)

// fail records rq's error reply, code and info ("-code info"), counted
// failed, for its caller to answer.
func (rq *request) fail(code, info string) {
	rq.errCode, rq.errInfo = code, info
	rq.sh.cmds[rq.cmd].failed++
}

// words walks a request's words after its key, encoded in request.val
// each after its uvarint length (cn.start).
type words []byte

// next returns the next word; w must not be empty.
func (w *words) next() []byte {
	l, k := binary.Uvarint(*w)
	v := (*w)[k : k+int(l)]
	*w = (*w)[k+int(l):]
	return v
}

// count is how many words are left.
func (w words) count() int {
	n := 0
	for len(w) > 0 {
		w.next()
		n++
	}
	return n
}

// applyData runs a value type's command, called by apply with the lock
// of rq's key's stripe, st, held, which it gives back: the others but
// MSET and MGET run under it; those two give it back at once and take
// each key's lock in turn. held is the loop's mark (stripe.lock).
func (s *store) applyData(st *stripe, rq *request, held *uint8) {
	r := rq.res[:0]
	if rq.op == OpMSet || rq.op == OpMGet {
		st.unlock(held)
	}
	switch rq.op {
	case OpMSet:
		w := words(rq.val)
		key, val := rq.key, w.next()
		for {
			st := s.stripeOf(key)
			st.lock(held)
			if e, ok := st.m[string(key)]; ok {
				e.v = append(e.v[:0], val...)
			} else {
				st.setNew(key, val)
			}
			st.unlock(held)
			if len(w) == 0 {
				break
			}
			key, val = w.next(), w.next()
		}
		r = appendOK(r)
	case OpMGet:
		w := words(rq.val)
		r = appendArrayHeader(r, 1+w.count())
		for key := rq.key; ; key = w.next() {
			st := s.stripeOf(key)
			st.lock(held)
			if e, ok := st.m[string(key)]; ok {
				r = appendBulk(r, e.v)
			} else {
				r = appendNil(r) // missing, or not a string: nil, as Redis
			}
			st.unlock(held)
			if len(w) == 0 {
				break
			}
		}
	default:
		r = st.apply1(rq, r)
		st.unlock(held)
	}
	// The reply is composed: from now on the request is answered as a
	// connection command is, its reply as its text (appendReply's
	// OpConst), so that appendReply has no case of its own for the value
	// types. Its counters stay its command's (rq.cmd); it was applied
	// (dispatched), so nothing asks its op again.
	rq.op, rq.val = OpConst, r
	// The request keeps the reply's buffer for its next ones (pooled,
	// LIFO: one in steady use is never trimmed) only when it is no
	// larger than GET's at most, MaxBulk: an LRANGE of a long list or an
	// MGET of a large value many times over composes a reply without
	// bound, which goes with val when the request is recycled. Else res
	// keeps the buffer it had (r's own when r did not grow).
	if cap(r) <= rq.sh.s.cfg.MaxBulk {
		rq.res = r
	}
}

// lookup returns key's value when it is a T; wrong is true when the key
// holds another type (a string included). st's lock is held.
func lookup[T any](st *stripe, key []byte) (v T, wrong bool) {
	if o, ok := st.t[string(key)]; ok {
		v, ok = o.(T)
		return v, !ok
	}
	_, wrong = st.m[string(key)]
	return v, wrong
}

// apply1 runs a value type's command on one key, whose stripe st is, its
// lock held, and appends its reply to r (nothing on an error: rq.fail).
func (st *stripe) apply1(rq *request, r []byte) []byte {
	w := words(rq.val)
	key := rq.key
	switch rq.op {
	case OpIncr, OpDecr, OpIncrBy, OpDecrBy:
		by := int64(1)
		if rq.op == OpIncrBy || rq.op == OpDecrBy {
			v, ok := parseInt64(w.next())
			if !ok {
				rq.fail("ERR", errNotInt)
				return r
			}
			by = v
		}
		if rq.op == OpDecr || rq.op == OpDecrBy {
			if by == math.MinInt64 {
				rq.fail("ERR", errDecrOverflow)
				return r
			}
			by = -by
		}
		e, ok := st.m[string(key)]
		var cur int64
		if ok {
			if cur, ok = parseInt64(e.v); !ok {
				rq.fail("ERR", errNotInt)
				return r
			}
		} else if st.holdsOther(key) {
			rq.fail(errCodeWrongType, errWrongType)
			return r
		}
		if by > 0 && cur > math.MaxInt64-by || by < 0 && cur < math.MinInt64-by {
			rq.fail("ERR", errOverflow)
			return r
		}
		cur += by
		if e != nil {
			e.v = strconv.AppendInt(e.v[:0], cur, 10)
		} else {
			st.m[string(key)] = &entry{v: strconv.AppendInt(nil, cur, 10)}
		}
		return appendInt(r, ':', cur)
	case OpType:
		t := "none"
		if o, ok := st.t[string(key)]; ok {
			switch o.(type) {
			case *list:
				t = "list"
			case *set:
				t = "set"
			case *hash:
				t = "hash"
			case *zset:
				t = "zset"
			case *stream:
				t = "stream"
			}
		} else if _, ok := st.m[string(key)]; ok {
			t = "string"
		}
		r = append(r, '+')
		r = append(r, t...)
		return append(r, '\r', '\n')
	case OpLPush, OpRPush, OpSAdd, OpHSet, OpZAdd, OpXAdd:
		return st.add(rq, r, w)
	}
	return st.read(rq, r, w)
}

// add runs the commands that create their key when it is missing.
func (st *stripe) add(rq *request, r []byte, w words) []byte {
	key := rq.key
	switch rq.op {
	case OpLPush, OpRPush:
		l, wrong := lookup[*list](st, key)
		if wrong {
			break
		}
		if l == nil {
			l = new(list)
			st.t[string(key)] = l
		}
		for len(w) > 0 {
			v := bytes.Clone(w.next())
			if v == nil {
				v = []byte{}
			}
			if rq.op == OpLPush {
				l.pushFront(v)
			} else {
				l.pushBack(v)
			}
		}
		return appendInt(r, ':', int64(l.n))
	case OpSAdd:
		s, wrong := lookup[*set](st, key)
		if wrong {
			break
		}
		if s == nil {
			s = &set{index: make(map[string]int)}
			st.t[string(key)] = s
		}
		n := 0
		for len(w) > 0 {
			if s.add(w.next()) {
				n++
			}
		}
		return appendInt(r, ':', int64(n))
	case OpHSet:
		h, wrong := lookup[*hash](st, key)
		if wrong {
			break
		}
		if h == nil {
			h = &hash{m: make(map[string][]byte)}
			st.t[string(key)] = h
		}
		n := 0
		for len(w) > 0 {
			f, v := w.next(), w.next()
			if old, ok := h.m[string(f)]; ok {
				h.m[string(f)] = append(old[:0], v...)
			} else {
				h.m[string(f)] = append([]byte{}, v...)
				n++
			}
		}
		return appendInt(r, ':', int64(n))
	case OpZAdd:
		// Every score is checked before any member is added, as Redis.
		for c := w; len(c) > 0; c.next() {
			if _, ok := parseScore(c.next()); !ok {
				rq.fail("ERR", errNotFloat)
				return r
			}
		}
		z, wrong := lookup[*zset](st, key)
		if wrong {
			break
		}
		if z == nil {
			z = &zset{score: make(map[string]float64)}
			st.t[string(key)] = z
		}
		n := 0
		for len(w) > 0 {
			sc, _ := parseScore(w.next())
			if z.add(sc, w.next()) {
				n++
			}
		}
		return appendInt(r, ':', int64(n))
	case OpXAdd:
		// As Redis's xaddCommand: the ID's syntax and an explicit 0-0
		// before the key's type, a stream at the last ID before the
		// ID's order.
		arg := w.next()
		if code := checkStreamID(arg); code != "" {
			rq.fail("ERR", code)
			return r
		}
		x, wrong := lookup[*stream](st, key)
		if wrong {
			break
		}
		last := streamID{}
		if x != nil {
			last = x.last
		}
		if last == (streamID{math.MaxUint64, math.MaxUint64}) {
			rq.fail("ERR", errStreamFull)
			return r
		}
		id, code := nextStreamID(arg, last)
		if code != "" {
			rq.fail("ERR", code)
			return r
		}
		if x == nil {
			x = new(stream)
			st.t[string(key)] = x
		}
		e := streamEntry{id: id, fields: make([][]byte, 0, w.count())}
		for len(w) > 0 {
			e.fields = append(e.fields, bytes.Clone(w.next()))
		}
		x.entries = append(x.entries, e)
		x.last = id
		return appendBulk(r, id.appendTo(nil))
	}
	rq.fail(errCodeWrongType, errWrongType)
	return r
}

// read runs the commands that read a key or take from it (and delete it
// once it is empty, as Redis).
func (st *stripe) read(rq *request, r []byte, w words) []byte {
	key := rq.key
	// The count of LPOP, RPOP, SPOP and ZPOPMIN, checked before the key
	// is looked up, as Redis.
	count, hasCount := int64(0), false
	switch rq.op {
	case OpLPop, OpRPop, OpSPop, OpZPopMin:
		if len(w) > 0 {
			v, ok := parseInt64(w.next())
			if !ok || v < 0 { // one message for both, as Redis's
				rq.fail("ERR", errNotPositive)
				return r
			}
			count, hasCount = v, true
		}
	}
	switch rq.op {
	case OpLPop, OpRPop, OpLRange, OpLLen:
		var start, stop int64
		if rq.op == OpLRange {
			var ok bool
			if start, stop, ok = parseRange(&w); !ok {
				rq.fail("ERR", errNotInt)
				return r
			}
		}
		l, wrong := lookup[*list](st, key)
		if wrong {
			break
		}
		switch rq.op {
		case OpLLen:
			if l == nil {
				return appendInt(r, ':', 0)
			}
			return appendInt(r, ':', int64(l.n))
		case OpLRange:
			if l == nil {
				return appendArrayHeader(r, 0)
			}
			i, j := rangeOf(start, stop, l.n)
			r = appendArrayHeader(r, j-i)
			for ; i < j; i++ {
				r = appendBulk(r, l.at(i))
			}
			return r
		}
		if l == nil {
			if hasCount {
				return append(r, "*-1\r\n"...)
			}
			return appendNil(r)
		}
		pop := l.popFront
		if rq.op == OpRPop {
			pop = l.popBack
		}
		if !hasCount {
			r = appendBulk(r, pop())
		} else {
			k := int(min(count, int64(l.n)))
			r = appendArrayHeader(r, k)
			for range k {
				r = appendBulk(r, pop())
			}
		}
		if l.n == 0 {
			delete(st.t, string(key))
		}
		return r
	case OpSRem, OpSPop, OpSCard, OpSIsMember, OpSMembers:
		s, wrong := lookup[*set](st, key)
		if wrong {
			break
		}
		if s == nil {
			s = &set{} // empty: answered as a missing key
		}
		switch rq.op {
		case OpSCard:
			return appendInt(r, ':', int64(len(s.members)))
		case OpSIsMember:
			_, ok := s.index[string(w.next())]
			return appendInt(r, ':', b2i(ok))
		case OpSMembers:
			r = appendArrayHeader(r, len(s.members))
			for _, m := range s.members {
				r = appendBulkString(r, m)
			}
			return r
		case OpSRem:
			n := 0
			for len(w) > 0 {
				if s.remove(w.next()) {
					n++
				}
			}
			r = appendInt(r, ':', int64(n))
		case OpSPop:
			if !hasCount {
				if len(s.members) == 0 {
					return appendNil(r)
				}
				r = appendBulkString(r, s.pop())
			} else {
				k := int(min(count, int64(len(s.members))))
				r = appendArrayHeader(r, k)
				for range k {
					r = appendBulkString(r, s.pop())
				}
			}
		}
		if len(s.members) == 0 {
			delete(st.t, string(key))
		}
		return r
	case OpHGet, OpHDel, OpHLen, OpHGetAll:
		h, wrong := lookup[*hash](st, key)
		if wrong {
			break
		}
		if h == nil {
			h = &hash{}
		}
		switch rq.op {
		case OpHGet:
			if v, ok := h.m[string(w.next())]; ok {
				return appendBulk(r, v)
			}
			return appendNil(r)
		case OpHLen:
			return appendInt(r, ':', int64(len(h.m)))
		case OpHGetAll:
			r = appendArrayHeader(r, 2*len(h.m))
			for f, v := range h.m {
				r = appendBulk(appendBulkString(r, f), v)
			}
			return r
		}
		n := 0
		for len(w) > 0 {
			f := w.next()
			if _, ok := h.m[string(f)]; ok {
				delete(h.m, string(f))
				n++
			}
		}
		if len(h.m) == 0 {
			delete(st.t, string(key))
		}
		return appendInt(r, ':', int64(n))
	case OpZPopMin, OpZCard, OpZScore, OpZRange:
		var start, stop int64
		if rq.op == OpZRange {
			var ok bool
			if start, stop, ok = parseRange(&w); !ok {
				rq.fail("ERR", errNotInt)
				return r
			}
		}
		z, wrong := lookup[*zset](st, key)
		if wrong {
			break
		}
		if z == nil {
			z = &zset{}
		}
		switch rq.op {
		case OpZCard:
			return appendInt(r, ':', int64(len(z.items)))
		case OpZScore:
			if sc, ok := z.score[string(w.next())]; ok {
				return appendScore(r, sc)
			}
			return appendNil(r)
		case OpZRange:
			withScores := len(w) > 0
			i, j := rangeOf(start, stop, len(z.items))
			n := j - i
			if withScores {
				n *= 2
			}
			r = appendArrayHeader(r, n)
			for _, it := range z.items[i:j] {
				r = appendBulkString(r, it.member)
				if withScores {
					r = appendScore(r, it.score)
				}
			}
			return r
		}
		if !hasCount {
			count = 1
		}
		k := int(min(count, int64(len(z.items))))
		r = appendArrayHeader(r, 2*k)
		for range k {
			it := z.popMin()
			r = appendScore(appendBulkString(r, it.member), it.score)
		}
		if len(z.items) == 0 {
			delete(st.t, string(key))
		}
		return r
	case OpXLen:
		x, wrong := lookup[*stream](st, key)
		if wrong {
			break
		}
		if x == nil {
			return appendInt(r, ':', 0)
		}
		return appendInt(r, ':', int64(len(x.entries)))
	}
	rq.fail(errCodeWrongType, errWrongType)
	return r
}

// rangeOf is Redis's index range [start, stop] of a sequence of n,
// negative indexes from the end, as a half-open [i, j) within it (empty
// when the range is).
func rangeOf(start, stop int64, n int) (i, j int) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if stop < 0 {
		stop += ln
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= ln {
		return 0, 0
	}
	if stop >= ln {
		stop = ln - 1
	}
	return int(start), int(stop) + 1
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// parseRange reads LRANGE's and ZRANGE's start and stop, both integers.
func parseRange(w *words) (start, stop int64, ok bool) {
	start, ok1 := parseInt64(w.next())
	stop, ok2 := parseInt64(w.next())
	return start, stop, ok1 && ok2
}

// parseInt64 parses a 64-bit integer as Redis's string2ll: an optional
// minus sign and decimal digits, no sign of plus, no leading zero, no
// space.
func parseInt64(b []byte) (int64, bool) {
	d := b
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 19 || d[0] == '0' && (len(d) > 1 || len(b) > 1) {
		return 0, false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	return v, err == nil
}

// parseScore parses a sorted set's score as Redis (string2d: C's
// strtod, the whole word): a float, hexadecimal ones included, or inf,
// infinity, with a sign or not; not NaN, not a value out of range either
// way (an underflow to zero included). Go's syntax differs from strtod's
// twice: it takes underscores between digits, and a hexadecimal float
// only with its p exponent.
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || isCSpace(b[0]) || bytes.IndexByte(b, '_') >= 0 {
		return 0, false
	}
	s := string(b)
	mant := strings.TrimLeft(s, "+-")
	hex := len(mant) > 2 && mant[0] == '0' && (mant[1] == 'x' || mant[1] == 'X')
	if hex {
		if !strings.ContainsAny(mant, "pP") {
			s += "p0" // strtod's exponent is optional
			mant = mant[2:]
		} else {
			mant = mant[2:strings.IndexAny(mant, "pP")]
		}
	} else if e := strings.IndexAny(mant, "eE"); e >= 0 {
		mant = mant[:e]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 && strings.TrimLeft(mant, "0.") != "" {
		return 0, false // a nonzero mantissa underflowed: strtod's ERANGE
	}
	return f, true
}

// isCSpace is C's isspace.
func isCSpace(c byte) bool { return c == '\n' || isSpace(c) }

// appendScore appends a score as Redis 7.0 replies it: "inf", "-inf", or
// printf's %.17g.
func appendScore(r []byte, f float64) []byte {
	var b [32]byte
	var s []byte
	switch {
	case math.IsInf(f, 1):
		s = append(b[:0], "inf"...)
	case math.IsInf(f, -1):
		s = append(b[:0], "-inf"...)
	default:
		s = strconv.AppendFloat(b[:0], f, 'g', 17, 64)
	}
	return appendBulk(r, s)
}

func appendBulkString(dst []byte, s string) []byte {
	dst = appendInt(dst, '$', int64(len(s)))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// list is a Redis list: a deque in a ring of a power-of-two size, so both
// ends push and pop in O(1) and an index is a mask away (LRANGE).
type list struct {
	buf  [][]byte
	head int // buf's index of the first element
	n    int
}

func (l *list) at(i int) []byte { return l.buf[(l.head+i)&(len(l.buf)-1)] }

// grow doubles the ring when it is full, the elements in order from 0.
func (l *list) grow() {
	if l.n < len(l.buf) {
		return
	}
	nb := make([][]byte, max(8, 2*len(l.buf)))
	for i := range l.n {
		nb[i] = l.at(i)
	}
	l.buf, l.head = nb, 0
}

func (l *list) pushFront(v []byte) {
	l.grow()
	l.head = (l.head - 1) & (len(l.buf) - 1)
	l.buf[l.head] = v
	l.n++
}

func (l *list) pushBack(v []byte) {
	l.grow()
	l.buf[(l.head+l.n)&(len(l.buf)-1)] = v
	l.n++
}

// popFront and popBack take an element off a list that has one.
func (l *list) popFront() []byte {
	v := l.buf[l.head]
	l.buf[l.head] = nil
	l.head = (l.head + 1) & (len(l.buf) - 1)
	l.n--
	return v
}

func (l *list) popBack() []byte {
	i := (l.head + l.n - 1) & (len(l.buf) - 1)
	v := l.buf[i]
	l.buf[i] = nil
	l.n--
	return v
}

// set is a Redis set: its members in a slice, each one's index in a map,
// so that adding, removing (the last member moves into the hole) and
// SPOP's random pick are all O(1).
type set struct {
	members []string
	index   map[string]int
}

func (s *set) add(m []byte) bool {
	if _, ok := s.index[string(m)]; ok {
		return false
	}
	s.index[string(m)] = len(s.members)
	s.members = append(s.members, string(m))
	return true
}

func (s *set) remove(m []byte) bool {
	i, ok := s.index[string(m)]
	if !ok {
		return false
	}
	s.removeAt(i)
	return true
}

func (s *set) removeAt(i int) {
	last := len(s.members) - 1
	delete(s.index, s.members[i])
	if i != last {
		s.members[i] = s.members[last]
		s.index[s.members[i]] = i
	}
	s.members[last] = ""
	s.members = s.members[:last]
}

// pop removes and returns a random member of a set that has one.
func (s *set) pop() string {
	i := rand.IntN(len(s.members))
	m := s.members[i]
	s.removeAt(i)
	return m
}

// hash is a Redis hash.
type hash struct{ m map[string][]byte }

// zset is a Redis sorted set: its members in a slice kept sorted by score
// then member (bytewise), as Redis orders them, and each one's score in a
// map. A sorted slice rather than Redis's skip list: an insert or an
// update is a binary search and a memmove of the slice's tail, O(n) bytes
// moved but few instructions, which at redis-benchmark's sizes (one to a
// few thousand members) costs less than a skip list's allocations and
// pointer chasing; ZPOPMIN takes the head by reslicing, O(1). A set of
// hundreds of thousands of members updated at random would want the skip
// list.
type zset struct {
	items []zitem
	score map[string]float64
}

type zitem struct {
	score  float64
	member string
}

// search is the index of (sc, m) in z.items, or where it would go.
func (z *zset) search(sc float64, m string) int {
	i, _ := slices.BinarySearchFunc(z.items, sc, func(it zitem, sc float64) int {
		switch {
		case it.score < sc:
			return -1
		case it.score > sc:
			return 1
		}
		return strings.Compare(it.member, m)
	})
	return i
}

// add sets m's score, and reports whether m is new.
func (z *zset) add(sc float64, m []byte) bool {
	old, ok := z.score[string(m)]
	var name string
	if ok {
		if old == sc {
			return false
		}
		i := z.search(old, string(m))
		name = z.items[i].member
		z.items = slices.Delete(z.items, i, i+1)
	} else {
		name = string(m)
	}
	if sc == 0 {
		sc = 0 // not -0: Redis answers a score of -0 as 0
	}
	z.score[name] = sc
	z.items = slices.Insert(z.items, z.search(sc, name), zitem{sc, name})
	return !ok
}

// popMin removes and returns the lowest member of a zset that has one.
func (z *zset) popMin() zitem {
	it := z.items[0]
	z.items[0] = zitem{}
	z.items = z.items[1:]
	delete(z.score, it.member)
	return it
}

// stream is a Redis stream: its entries in ID order, and the last ID.
type stream struct {
	entries []streamEntry
	last    streamID
}

type streamEntry struct {
	id     streamID
	fields [][]byte // field, value, ...
}

// streamID is a stream entry's ID: milliseconds, sequence.
type streamID struct{ ms, seq uint64 }

func (id streamID) less(o streamID) bool {
	return id.ms < o.ms || id.ms == o.ms && id.seq < o.seq
}

func (id streamID) appendTo(b []byte) []byte {
	b = strconv.AppendUint(b, id.ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, id.seq, 10)
}

// checkStreamID returns the error's text of an XADD ID that is not one
// ("*", "ms", "ms-seq" or "ms-*"), or that is 0-0 with its sequence
// given ("0" or "0-0", not "0-*"), as Redis's xaddCommand checks them
// before it looks its key up; else "".
func checkStreamID(arg []byte) string {
	if len(arg) == 1 && arg[0] == '*' {
		return ""
	}
	msPart, seqPart, hasSeq := bytes.Cut(arg, []byte("-"))
	ms, ok := parseULL(msPart)
	if !ok {
		return errStreamID
	}
	if hasSeq && len(seqPart) == 1 && seqPart[0] == '*' {
		return ""
	}
	var seq uint64
	if hasSeq {
		if seq, ok = parseULL(seqPart); !ok {
			return errStreamID
		}
	}
	if ms == 0 && seq == 0 {
		return errStreamZero
	}
	return ""
}

// parseULL parses a stream ID's part as Redis's string2ull: string2ll's
// strict integer when it is one (not negative), else C's strtoull of the
// whole word (leading spaces, a sign, digits, no overflow; a minus sign
// negates modulo 2^64, as strtoull's does).
func parseULL(b []byte) (uint64, bool) {
	if v, ok := parseInt64(b); ok {
		return uint64(v), v >= 0
	}
	i := 0
	for i < len(b) && isCSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false // ERANGE
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}

// nextStreamID is XADD's ID for arg, which checkStreamID passed, after
// last, which is not the last possible ID, or the error's text.
func nextStreamID(arg []byte, last streamID) (streamID, string) {
	if len(arg) == 1 && arg[0] == '*' {
		ms := uint64(time.Now().UnixMilli())
		if ms > last.ms {
			return streamID{ms, 0}, ""
		}
		if last.seq == math.MaxUint64 {
			if last.ms == math.MaxUint64 {
				return streamID{}, errStreamSmaller
			}
			return streamID{last.ms + 1, 0}, ""
		}
		return streamID{last.ms, last.seq + 1}, ""
	}
	msPart, seqPart, hasSeq := bytes.Cut(arg, []byte("-"))
	ms, _ := parseULL(msPart)
	id := streamID{ms: ms}
	switch {
	case hasSeq && len(seqPart) == 1 && seqPart[0] == '*':
		if ms == last.ms {
			if last.seq == math.MaxUint64 {
				return streamID{}, errStreamSmaller
			}
			id.seq = last.seq + 1
		}
	case hasSeq:
		id.seq, _ = parseULL(seqPart)
	}
	// 0-0 here is "0-*" after a last ID of another millisecond (an
	// explicit 0-0 is checkStreamID's): smaller, as Redis says.
	if !last.less(id) {
		return streamID{}, errStreamSmaller
	}
	return id, ""
}
