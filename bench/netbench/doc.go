// Package netbench is the network half of the benchmarks: two peers of
// stepsd, RESP servers written the plain Go way, and a load generator that
// drives any of them (or redis-server) over loopback. cmd/loadbench runs
// them side by side.
//
//   - gnetpeer.go (StartGnet): what a plain gnet user would write: one
//     gnet.Run, multicore event loops, every complete request of an
//     OnTraffic served and replied to with one write;
//   - netpeer.go (StartNet): a goroutine per connection with an input
//     buffer and a bufio Writer, flushing once no complete request is
//     buffered;
//   - kvstore.go: their store (a sharded map behind mutexes); both parse
//     with stepsd.Parser and format replies with stepsd.AppendReply,
//     AppendBad and AppendError, so all three servers put the same bytes
//     on the wire, and take stepsd's default protocol limits;
//   - load.go (RunLoad, RunSlowReaders): the load, a goroutine per
//     connection, a batch of Pipeline requests (RESP arrays) per write,
//     every reply checked and its latency recorded in a Histogram
//     (histogram.go) without allocating.
//
// The protocol is stepsd's: RESP2, SET, GET, DEL, PING, ECHO, SLEEP ms
// (+OK after ms milliseconds, without holding up other connections), QUIT
// and the connect-time commands; see package stepsd. stepsd's other value
// types (INCR, MSET, lists, sets, hashes, sorted sets, streams) are not
// the peers': their parser refuses those commands as unknown
// (stepsd.Parser.StringsOnly). The comparisons use SET, GET, PING and
// ECHO, which every server has, so that the peers' store stays what a
// plain Go server would write for them.
//
// It is a package of its own, not part of package bench, because gnet's
// package initializes a global goroutine pool (ants) whose clock goroutine
// allocates every 500ms: linked into bench, it shows as stray allocations
// in the engine scenarios' zero-allocation checks and allocs/op columns.
// Nothing in package bench imports gnet's root package.
package netbench
