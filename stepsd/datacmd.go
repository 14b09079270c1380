package stepsd

// This file is the protocol side of the value types (types.go): the
// commands on lists, sets, hashes, sorted sets and streams, and the string
// commands beyond SET, GET and DEL. Each is an Op of its own, numbered
// after the connection's commands, so that Metrics.Commands and the flows'
// names count them by command; a request of one is a key command like
// SET's (it applies under its key's lock, in its connection's order),
// with its words after the key kept, encoded, in the request (cn.start).
//
// None of them is on SET's, GET's, PING's or ECHO's path: Parser.command
// tries them after those (and the direct run never takes them: directly),
// so those four cost what they cost before (callgrind,
// profiles/notes/2026-11-28-types-round12.md).

// The value types' commands. opFirstData-1 is no command: it is the
// counters' index of a refused request (cmdInvalid), kept below 32 for
// the bit sets of a direct run's commands.
const (
	opFirstData = OpQuit + 2
	// strings
	OpIncr   Op = opFirstData + iota // INCR key → :value
	OpDecr                           // DECR key → :value
	OpIncrBy                         // INCRBY key n → :value
	OpDecrBy                         // DECRBY key n → :value
	OpMSet                           // MSET key value [key value ...] → +OK
	OpMGet                           // MGET key [key ...] → *values (nil for a missing or non-string key)
	OpType                           // TYPE key → +string|list|set|hash|zset|stream|none
	// lists
	OpLPush  // LPUSH key element [element ...] → :length
	OpRPush  // RPUSH key element [element ...] → :length
	OpLPop   // LPOP key [count] → $element | *elements | nil
	OpRPop   // RPOP key [count] → $element | *elements | nil
	OpLRange // LRANGE key start stop → *elements
	OpLLen   // LLEN key → :length
	// sets
	OpSAdd      // SADD key member [member ...] → :added
	OpSRem      // SREM key member [member ...] → :removed
	OpSPop      // SPOP key [count] → $member | *members | nil
	OpSCard     // SCARD key → :members
	OpSIsMember // SISMEMBER key member → :0|1
	OpSMembers  // SMEMBERS key → *members
	// hashes
	OpHSet    // HSET key field value [field value ...] → :fields added
	OpHGet    // HGET key field → $value | nil
	OpHDel    // HDEL key field [field ...] → :removed
	OpHLen    // HLEN key → :fields
	OpHGetAll // HGETALL key → *field, value, ...
	// sorted sets
	OpZAdd    // ZADD key score member [score member ...] → :added
	OpZPopMin // ZPOPMIN key [count] → *member, score, ...
	OpZCard   // ZCARD key → :members
	OpZScore  // ZSCORE key member → $score | nil
	OpZRange  // ZRANGE key start stop [WITHSCORES] → *members (and scores)
	// streams
	OpXAdd // XADD key *|id field value [field value ...] → $id
	OpXLen // XLEN key → :entries
	opEnd
)

// Typed reports whether op is one of the value types' commands, beyond
// SET, GET and DEL (INCR, MSET, the lists', sets', hashes', sorted sets'
// and streams' commands, TYPE). A server that keeps strings only (the
// benchmark's peers) refuses them.
func (op Op) Typed() bool { return op >= opFirstData && op < opEnd }

// dataCmd is a value type command's entry: its name, its Op, its
// arguments' bounds (the name included; max 0: no bound) and the shape
// of its arguments after the key (pairs: they come in pairs, or as a
// count where the shape is the command's own).
type dataCmd struct {
	name     []byte
	op       Op
	min, max int
	shape    uint8
	doc      commandDoc
}

// Argument shapes a parse checks (dataCmd.shape).
const (
	shapeAny   = iota
	shapePairs // key value [key value ...] from the first argument (MSET)
	shapeFV    // key field value [field value ...] (HSET)
	shapeZAdd  // key score member [score member ...]: "syntax error" otherwise, as Redis
	shapeXAdd  // key id field value [field value ...]
)

func newDataCmd(name string, op Op, min, max int, shape uint8, summary, group string, args ...docArg) dataCmd {
	return dataCmd{[]byte(name), op, min, max, shape, newCommandDoc(name, summary, group, args...)}
}

// dataCmds: the value types' commands, as Redis has them (the options
// stepsd does not have are left out of their docs).
var dataCmds = [...]dataCmd{
	newDataCmd("INCR", OpIncr, 2, 2, shapeAny, "Increment the integer value of a key by one", "string", docArg{"key", "key", ""}),
	newDataCmd("DECR", OpDecr, 2, 2, shapeAny, "Decrement the integer value of a key by one", "string", docArg{"key", "key", ""}),
	newDataCmd("INCRBY", OpIncrBy, 3, 3, shapeAny, "Increment the integer value of a key by a number", "string", docArg{"key", "key", ""}, docArg{"increment", "integer", ""}),
	newDataCmd("DECRBY", OpDecrBy, 3, 3, shapeAny, "Decrement the integer value of a key by a number", "string", docArg{"key", "key", ""}, docArg{"decrement", "integer", ""}),
	newDataCmd("MSET", OpMSet, 3, 0, shapePairs, "Set the string values of keys (each key on its own: not atomic across keys)", "string", docArg{"key", "key", "multiple"}, docArg{"value", "string", "multiple"}),
	newDataCmd("MGET", OpMGet, 2, 0, shapeAny, "Get the string values of keys", "string", docArg{"key", "key", "multiple"}),
	newDataCmd("TYPE", OpType, 2, 2, shapeAny, "Determine the type of value stored at a key", "generic", docArg{"key", "key", ""}),
	newDataCmd("LPUSH", OpLPush, 3, 0, shapeAny, "Prepend elements to a list", "list", docArg{"key", "key", ""}, docArg{"element", "string", "multiple"}),
	newDataCmd("RPUSH", OpRPush, 3, 0, shapeAny, "Append elements to a list", "list", docArg{"key", "key", ""}, docArg{"element", "string", "multiple"}),
	newDataCmd("LPOP", OpLPop, 2, 3, shapeAny, "Remove and return the first elements of a list", "list", docArg{"key", "key", ""}, docArg{"count", "integer", "optional"}),
	newDataCmd("RPOP", OpRPop, 2, 3, shapeAny, "Remove and return the last elements of a list", "list", docArg{"key", "key", ""}, docArg{"count", "integer", "optional"}),
	newDataCmd("LRANGE", OpLRange, 4, 4, shapeAny, "Get a range of elements from a list", "list", docArg{"key", "key", ""}, docArg{"start", "integer", ""}, docArg{"stop", "integer", ""}),
	newDataCmd("LLEN", OpLLen, 2, 2, shapeAny, "Get the length of a list", "list", docArg{"key", "key", ""}),
	newDataCmd("SADD", OpSAdd, 3, 0, shapeAny, "Add members to a set", "set", docArg{"key", "key", ""}, docArg{"member", "string", "multiple"}),
	newDataCmd("SREM", OpSRem, 3, 0, shapeAny, "Remove members from a set", "set", docArg{"key", "key", ""}, docArg{"member", "string", "multiple"}),
	newDataCmd("SPOP", OpSPop, 2, 0, shapeAny, "Remove and return random members of a set", "set", docArg{"key", "key", ""}, docArg{"count", "integer", "optional"}),
	newDataCmd("SCARD", OpSCard, 2, 2, shapeAny, "Get the number of members in a set", "set", docArg{"key", "key", ""}),
	newDataCmd("SISMEMBER", OpSIsMember, 3, 3, shapeAny, "Determine if a value is a member of a set", "set", docArg{"key", "key", ""}, docArg{"member", "string", ""}),
	newDataCmd("SMEMBERS", OpSMembers, 2, 2, shapeAny, "Get all the members of a set", "set", docArg{"key", "key", ""}),
	newDataCmd("HSET", OpHSet, 4, 0, shapeFV, "Set the values of fields of a hash", "hash", docArg{"key", "key", ""}, docArg{"field", "string", "multiple"}, docArg{"value", "string", "multiple"}),
	newDataCmd("HGET", OpHGet, 3, 3, shapeAny, "Get the value of a field of a hash", "hash", docArg{"key", "key", ""}, docArg{"field", "string", ""}),
	newDataCmd("HDEL", OpHDel, 3, 0, shapeAny, "Delete fields of a hash", "hash", docArg{"key", "key", ""}, docArg{"field", "string", "multiple"}),
	newDataCmd("HLEN", OpHLen, 2, 2, shapeAny, "Get the number of fields in a hash", "hash", docArg{"key", "key", ""}),
	newDataCmd("HGETALL", OpHGetAll, 2, 2, shapeAny, "Get all the fields and values of a hash", "hash", docArg{"key", "key", ""}),
	newDataCmd("ZADD", OpZAdd, 4, 0, shapeZAdd, "Add members to a sorted set, or update their scores (no options)", "sorted-set", docArg{"key", "key", ""}, docArg{"score", "double", "multiple"}, docArg{"member", "string", "multiple"}),
	newDataCmd("ZPOPMIN", OpZPopMin, 2, 0, shapeAny, "Remove and return the members with the lowest scores", "sorted-set", docArg{"key", "key", ""}, docArg{"count", "integer", "optional"}),
	newDataCmd("ZCARD", OpZCard, 2, 2, shapeAny, "Get the number of members in a sorted set", "sorted-set", docArg{"key", "key", ""}),
	newDataCmd("ZSCORE", OpZScore, 3, 3, shapeAny, "Get the score of a member of a sorted set", "sorted-set", docArg{"key", "key", ""}, docArg{"member", "string", ""}),
	newDataCmd("ZRANGE", OpZRange, 4, 0, shapeAny, "Get members of a sorted set by index, lowest score first", "sorted-set", docArg{"key", "key", ""}, docArg{"start", "integer", ""}, docArg{"stop", "integer", ""}, docArg{"withscores", "pure-token", "optional"}),
	newDataCmd("XADD", OpXAdd, 5, 0, shapeXAdd, "Append an entry to a stream (no options)", "stream", docArg{"key", "key", ""}, docArg{"id", "string", ""}, docArg{"field", "string", "multiple"}, docArg{"value", "string", "multiple"}),
	newDataCmd("XLEN", OpXLen, 2, 2, shapeAny, "Get the number of entries in a stream", "stream", docArg{"key", "key", ""}),
}

// dataCommand sets req's Op and Key when its name is a value type's
// command, and Bad when its arguments are not as the command takes them;
// it reports whether the name was one.
func dataCommand(req *Request) bool {
	args := req.Args
	name, argc := args[0], len(args)
	for i := range dataCmds {
		d := &dataCmds[i]
		if !asciiFold(name, d.name) {
			continue
		}
		req.Op = d.op
		if argc < d.min || d.max > 0 && argc > d.max {
			req.Bad = badArity
			return true
		}
		switch d.shape {
		case shapePairs:
			if (argc-1)%2 != 0 {
				req.Bad = badArity
				return true
			}
		case shapeFV:
			if (argc-2)%2 != 0 {
				req.Bad = badArity
				return true
			}
		case shapeZAdd:
			if (argc-2)%2 != 0 {
				req.Bad = badSyntax
				return true
			}
		case shapeXAdd:
			if (argc-3)%2 != 0 {
				req.Bad = badArity
				return true
			}
		}
		switch d.op {
		case OpSPop, OpZPopMin:
			// More than a count: Redis's syntax error (LPOP's and
			// RPOP's is an arity error, their max).
			if argc > 3 {
				req.Bad = badSyntax
				return true
			}
		case OpZRange:
			// Its options: WITHSCORES, which may repeat, as Redis's.
			for _, a := range args[4:] {
				if !asciiFold(a, cmdWithScores) {
					req.Bad = badSyntax
					return true
				}
			}
		}
		req.Key = args[1]
		return true
	}
	return false
}

var cmdWithScores = []byte("WITHSCORES")

// dataOpName is op's name, upper case, for its flows and counters.
func dataOpName(op Op) string {
	for i := range dataCmds {
		if dataCmds[i].op == op {
			return string(dataCmds[i].name)
		}
	}
	return ""
}
