// Package stepsd is a Redis-protocol (RESP2) key-value server that runs
// AsyncSteps flows on per-core reactors, one per read of a connection,
// each request inside a Limiter; cmd/stepsd is its
// command. It is the worked example of embedding the engine in a network
// server: Redis clients in every language, redis-cli, redis-benchmark and
// twemproxy drive it.
//
// # Protocol
//
// RESP2, as Redis speaks it: a request is an array of bulk strings, or an
// inline command (one line of words, with Redis's quoting, so nc and telnet
// work); replies leave in request order per connection.
//
//	SET key value      → +OK
//	GET key            → $value, or $-1 (nil)
//	DEL key [key ...]  → :keys deleted
//	PING [text]        → +PONG, or $text
//	ECHO text          → $text
//	SLEEP ms           → +OK after ms milliseconds (ours; 0 to 3600000)
//	QUIT               → +OK, then the connection closes
//
// and Redis's value types, each with its commands and Redis's replies and
// errors ("-WRONGTYPE ..." on a key of another type, "-ERR value is not
// an integer or out of range", ...):
//
//	strings       INCR, DECR, INCRBY, DECRBY (64-bit), MSET, MGET
//	lists         LPUSH, RPUSH, LPOP, RPOP [count], LRANGE, LLEN (a deque)
//	sets          SADD, SREM, SPOP [count], SCARD, SISMEMBER, SMEMBERS
//	hashes        HSET, HGET, HDEL, HLEN, HGETALL
//	sorted sets   ZADD, ZPOPMIN [count], ZCARD, ZSCORE, ZRANGE [WITHSCORES]
//	streams       XADD key *|id field value ..., XLEN (no groups)
//	any key       TYPE; DEL deletes a key of any type
//
// An emptied list, set, hash or sorted set is deleted, as in Redis, and a
// SET or MSET replaces a key of any type. A command on several keys (MSET,
// MGET, DEL) applies key by key, each under its key's lock: not atomic
// across keys, as Redis's are. So redis-benchmark's whole default suite
// runs (TestRedisBenchmarkDefaultSuite, in the bench module). The value
// types stay off SET's, GET's, PING's and ECHO's path: those are parsed
// and applied first, the others after; a string's map is apart from the
// other types' (the store's two maps), so only a GET that misses and a
// SET of a new key look at the other (profiles/notes,
// 2026-11-28-types-round12.md, has the cost by callgrind).
//
// What clients send on connect gets the answer Redis gives: HELLO 2 its
// map, HELLO 3 "-NOPROTO" (clients then go on in RESP2), CLIENT
// SETNAME/SETINFO +OK, COMMAND an empty array, COMMAND DOCS the docs of
// the commands above in Redis 7's form (COMMAND COUNT their number) (redis-cli's interactive help and
// hints are built from them), CONFIG GET
// save/appendonly the values of a server without persistence, SELECT 0
// +OK, INFO a short server section. A request that fails is answered an
// error with its FutoIn code: "-Timeout ..." (over
// Config.Timeout), "-DefenseRejected ..." (the Limiter is full). A request
// refused as Redis would refuse it answers "-ERR ..." (unknown command,
// wrong number of arguments: FutoIn's InvalidRequest, with Redis's code so
// clients read it as they read Redis's). A protocol error (framing lost, or
// over Config's MaxLine, MaxBulk, MaxArgs or MaxRequest) answers "-ERR
// Protocol error: ..." once the requests before it are answered, and
// closes the connection. Parser, AppendReply, AppendBad and AppendError
// are the protocol, shared with the benchmark's peer servers.
//
// # How a request runs
//
//   - Connections are spread over the reactors (netio). The requests of
//     one read run as one flow on the connection's reactor, one after
//     another in arrival order: a flow's start, run and end, which cost
//     about as much as the rest of a request, are paid once per read of a
//     pipeline. Each request is still its own: it runs inside the
//     Limiter (one per reactor with its share of the bounds, or one
//     shared: Config, "The Limiter") and records its own reply; an error
//     (-DefenseRejected, -ERR ...) answers that request alone, and the
//     flow goes on to the next. The requests at the head of a read that
//     are answered within a step (all but SLEEP and a key command whose
//     turn has not come) run as one step, let into the Limiter together
//     (syncprim's Limiter.TryEnterRun: one concurrency slot, a rate entry
//     each) as far as each would have entered at once; the first the
//     Limiter cannot take, and every request after it, has its own step,
//     the Limiter's section, so it is queued or refused with
//     DefenseRejected as itself. When the connection has nothing in
//     flight, such a run is answered straight from the parse of its
//     requests (framed SET, GET, one-key DEL, ECHO, PING, refused ones),
//     with no request object: its replies leave first, then the others'.
//   - A request that waits (in the Limiter's queue, a SLEEP, a key command
//     waiting for an earlier one) holds back no later request of its read:
//     each of those goes on at once in a flow of its own, as it would with
//     a flow per request. So under overload every request of a read
//     enters the Limiter as itself and is queued or refused with
//     DefenseRejected as it would be alone, and a request that waits is
//     alone in its flow: its Timeout or its connection's reset cancels it
//     and nothing else. Flows, requests and their buffers are pooled per
//     reactor: a request allocates nothing once warm
//     (TestRequestPathDoesNotAllocate).
//   - Config.Timeout costs nothing to a request answered within its read:
//     only the requests still waiting when their read's flows have run (in
//     the Limiter's queue, a SLEEP, a key command behind a queued one) go
//     on their reactor's deadline list, which one timer per reactor
//     watches; past its Timeout a request is answered -Timeout and its flow
//     canceled.
//   - The keys are shared by every reactor, in a map striped over 64
//     locks (FNV-1a of the key): a command on a key applies on its
//     connection's reactor, under its stripe's lock, with no trip to
//     another reactor (a hop and its wake-ups cost microseconds; the lock,
//     nanoseconds). A connection's key commands apply in its request
//     order, so a GET always sees the SET the same connection sent before
//     it, even when the Limiter is contended.
//   - A Timeout reply says the answer did not come in time, not that the
//     command was not applied.
//   - Replies leave in request order. A read's flow runs at once
//     (engine.RunReady), and the replies of the requests that finish leave in one
//     write(2) before the reactor reads its next connection, as in a plain
//     event-loop server; replies that come later (SLEEP, a queued
//     Limiter) leave from one end-of-iteration task per reactor.
//   - Start raises GOMAXPROCS to Reactors+1 if it is lower (Config.Procs):
//     a reactor sleeping in epoll_wait then keeps its P.
//   - A connection with Config.MaxPipeline requests in flight, or whose
//     requests in flight hold Config.MaxRequest bytes of keys and values,
//     stops being read until half of them are answered; netio stops reading a peer
//     that does not read its replies. Memory is bounded by both.
//   - A connection that resets (or that the server closes: a limit, a
//     write error) cancels the flows of its requests still in flight: their
//     cancel handlers run and their Limiter slots return at once, also when
//     its pipeline is full and the server no longer reads it (the reset is
//     watched for all the same). After a half-close every request already
//     read is still answered.
//   - Connection limits (Config.IdleTimeout, ReadTimeout, WriteTimeout,
//     MaxConns; netio.Options) bound what an idle, slowloris or
//     never-reading client can hold. WriteTimeout cuts a client that takes
//     none of its replies for that long; one that reads slowly but
//     steadily is kept. A connection closed for a time limit with replies
//     it has not read is reset, so the kernel does not keep them.
//     Server.Metrics counts the connections refused and closed by each
//     limit (Metrics.Net, Metrics.ProtocolErrors) beside the Limiter's
//     rejections.
//   - Pooled requests that stayed unused for a whole second are dropped
//     (and their roots released, which the engine's pools drop the same
//     way), and a drop of a burst's worth is followed by a GC, so an idle
//     server's RSS is back near its start within seconds of a burst
//     (TestMemoryReturnsAfterBurst: after 20,000 SLEEPs, RSS at most 2x
//     its start within 10 s; about 1.2x at 4.5 s when measured,
//     profiles/notes/2026-11-27-memory-after-burst.md).
//   - Shutdown stops accepting and reading, lets requests in flight finish
//     or time out, writes their replies, then closes.
//   - A read's flow is named after its requests' command (SET, GET, DEL,
//     ECHO, PING, SLEEP, QUIT; CONNECTION for the commands answered with a
//     fixed reply; INVALID for a refused one), or PIPELINE when they are
//     not all one command (a request in a flow of its own: its command).
//     CPU profile samples carry the label flow=<name>, and the engine's
//     counters by flow name count reads. Server.Metrics counts requests by
//     command (Metrics.Commands: started, answered, answered with an
//     error, abandoned, and their summed life from read to reply), beside
//     every reactor's counters and the Limiter's (cmd/stepsd serves them
//     with -admin).
package stepsd
