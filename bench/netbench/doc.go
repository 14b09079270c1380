// Package netbench is the network half of the benchmarks: two peers of
// stepsd, servers of the same line protocol written the plain Go way, and
// a load generator that drives any of the three over loopback.
// cmd/loadbench runs them side by side.
//
//   - gnetpeer.go (StartGnet): what a plain gnet user would write: one
//     gnet.Run, multicore event loops, every complete line of an OnTraffic
//     served and replied to with one write;
//   - netpeer.go (StartNet): a goroutine per connection with a bufio
//     Reader and Writer, flushing once no complete line is buffered;
//   - kvstore.go: their store (a sharded map behind mutexes) and line
//     limit; both parse with stepsd.Parse and format replies with
//     stepsd.AppendReply and stepsd.AppendError, so all three servers put
//     the same bytes on the wire;
//   - load.go (RunLoad, RunSlowReaders): the load, a goroutine per
//     connection, a batch of Pipeline requests per write, every reply
//     checked and its latency recorded in a Histogram (histogram.go)
//     without allocating.
//
// The protocol: one request per "\n"-terminated line and one reply line
// per request, in order per connection. SET key value → OK; GET key →
// VALUE value or NOTFOUND; DEL key → OK or NOTFOUND; ECHO text → ECHO
// text; SLEEP ms → OK after ms milliseconds, without holding up other
// connections; anything else → ERR InvalidRequest info. A line longer
// than MaxLine ("\n" included) is answered ERR InvalidRequest line too
// long and closes the connection.
//
// It is a package of its own, not part of package bench, because gnet's
// package initializes a global goroutine pool (ants) whose clock goroutine
// allocates every 500ms: linked into bench, it shows as stray allocations
// in the engine scenarios' zero-allocation checks and allocs/op columns.
// Nothing in package bench imports gnet's root package.
package netbench
