// Command stepsd is a Redis-protocol (RESP2) key-value server that runs
// one AsyncSteps flow per read of a connection, a Limiter section per
// request, on per-core reactors (package stepsd). Redis clients,
// redis-cli, redis-benchmark and twemproxy drive it; nc and telnet send
// inline commands, as to Redis.
//
//	SET key value      → +OK
//	GET key            → $value | $-1 (nil)
//	DEL key [key ...]  → :keys deleted
//	PING [text]        → +PONG | $text
//	ECHO text          → $text
//	SLEEP ms           → +OK, after ms milliseconds (ours)
//	QUIT               → +OK, and the connection closes
//
// the value types, as Redis has them, with Redis's replies and errors
// (WRONGTYPE on a key of another type; an emptied list, set, hash or
// sorted set is deleted):
//
//	strings       INCR DECR INCRBY DECRBY MSET MGET
//	lists         LPUSH RPUSH LPOP RPOP [count] LRANGE LLEN
//	sets          SADD SREM SPOP [count] SCARD SISMEMBER SMEMBERS
//	hashes        HSET HGET HDEL HLEN HGETALL
//	sorted sets   ZADD ZPOPMIN [count] ZCARD ZSCORE ZRANGE [WITHSCORES]
//	streams       XADD key *|id field value ... XLEN
//	any key       TYPE, DEL
//
// and what clients send on connect (HELLO 2, CLIENT SETNAME/SETINFO,
// COMMAND, CONFIG GET save/appendonly, SELECT 0, INFO) gets the answer
// Redis gives; COMMAND DOCS documents the commands above, for redis-cli's
// help. A failure answers an error with a FutoIn code:
// "-Timeout ..." or "-DefenseRejected ..." (the Limiter is full); a
// refused request answers "-ERR ..." as Redis does, and a protocol error
// "-ERR Protocol error: ..." and closes the connection. SIGINT or SIGTERM
// stops it gracefully.
//
// With -admin 127.0.0.1:7071 it also serves, on that separate loopback
// port, Prometheus metrics (/metrics: per reactor, per command, the
// Limiter, connections refused and closed by each limit) and
// net/http/pprof (/debug/pprof/). A read's flow is named after its
// requests' command (PIPELINE when they differ), so the CPU profile of a
// loaded server splits by command:
//
//	go tool pprof -tags http://127.0.0.1:7071/debug/pprof/profile?seconds=10
//	go tool pprof -tagfocus=flow=GET -top http://127.0.0.1:7071/debug/pprof/profile?seconds=10
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/stepsd"
)

// options are the command's settings: the server's Config and the
// command's own.
type options struct {
	cfg         stepsd.Config
	cpuprofile  string
	admin       string // -admin: the admin port's address; "" = off
	adminPublic bool   // -admin-public: allow a non-loopback admin address
}

// usageHead is what -h prints above the flags: what the server speaks and
// how to try it, as the package doc says at more length.
const usageHead = `Usage: stepsd [flags]

stepsd is a Redis-protocol (RESP2) key-value server: redis-cli,
redis-benchmark, Redis client libraries and twemproxy drive it, and nc or
telnet send inline commands. Commands:
  SET key value      +OK
  GET key            the value, or nil
  DEL key [key ...]  :keys deleted
  PING [text]        +PONG, or the text
  ECHO text          the text
  SLEEP ms           +OK after ms milliseconds (ours; other requests go on)
  QUIT               +OK, and the connection closes
and Redis's value types, with Redis's replies and errors (WRONGTYPE):
  strings      INCR DECR INCRBY DECRBY MSET MGET
  lists        LPUSH RPUSH LPOP RPOP [count] LRANGE LLEN
  sets         SADD SREM SPOP [count] SCARD SISMEMBER SMEMBERS
  hashes       HSET HGET HDEL HLEN HGETALL
  sorted sets  ZADD ZPOPMIN [count] ZCARD ZSCORE ZRANGE [WITHSCORES]
  streams      XADD key *|id field value ... XLEN
  any key      TYPE, DEL
Failures are errors with a FutoIn code (-Timeout, -DefenseRejected); a
command Redis would refuse gets Redis's -ERR; a protocol error (lost
framing, a request over -maxline/-maxbulk/-maxargs/-maxrequest) gets
"-ERR Protocol error: ..." and closes the connection.
Try, with the defaults:
  redis-cli -p 7070 set a b
  redis-benchmark -p 7070 -q     (its whole default suite)
SIGINT or SIGTERM stops it, letting requests in flight finish.

Flags:
`

// parseFlags parses the command line. The defaults shown by -h are the
// real ones (stepsd.DefaultConfig); a value given on the command line means
// what the library says it means, and one the library would replace with a
// default (zero or negative) is refused with an error naming the flag.
func parseFlags(args []string, out io.Writer) (options, error) {
	d := stepsd.DefaultConfig()
	o := options{cfg: d}
	cfg := &o.cfg
	fs := flag.NewFlagSet("stepsd", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.Addr, "addr", d.Addr, "listen address")
	fs.IntVar(&cfg.Reactors, "reactors", d.Reactors, "reactors, one OS thread each (at least 1); default: one per CPU but one (a CPU left for the kernel, the runtime and clients; see stepsd.DefaultReactors)")
	fs.BoolVar(&cfg.Pin, "pin", false, "pin reactor i to CPU i")
	fs.DurationVar(&cfg.Timeout, "timeout", d.Timeout, "per-request timeout (more than 0)")
	fs.IntVar(&cfg.Concurrent, "concurrent", d.Concurrent, "Limiter: requests executing at once (at least 1)")
	fs.IntVar(&cfg.Rate, "rate", d.Rate, "Limiter: requests started per second (at least 1)")
	fs.IntVar(&cfg.Queue, "queue", d.Queue, "Limiter: requests waiting for a concurrency slot; 0: no queue (FTN12's max_queue=0), -1: unlimited")
	fs.IntVar(&cfg.Burst, "burst", d.Burst, "Limiter: requests waiting for the rate; 0: none, -1: unlimited")
	fs.BoolVar(&cfg.SharedLimiter, "shared-limiter", false, "one Limiter for all reactors, its bounds exact across them; default: each reactor its share of -concurrent, -queue, -rate and -burst where the shares change nothing for one connection (faster on many cores; see stepsd.Config)")
	fs.IntVar(&cfg.MaxLine, "maxline", d.MaxLine, "longest inline command, or array or bulk header, line in bytes; longer is a protocol error (at least 16)")
	fs.IntVar(&cfg.MaxBulk, "maxbulk", d.MaxBulk, "longest bulk string (Redis's proto-max-bulk-len) in bytes (at least 1, at most -maxrequest)")
	fs.IntVar(&cfg.MaxArgs, "maxargs", d.MaxArgs, "most arguments of a command (at least 3)")
	fs.IntVar(&cfg.MaxRequest, "maxrequest", d.MaxRequest, "largest request in bytes, and the bytes a connection's requests in flight may hold before it stops reading (at least -maxline)")
	fs.IntVar(&cfg.MaxPipeline, "pipeline", d.MaxPipeline, "requests in flight per connection before it stops reading (at least 1)")
	fs.DurationVar(&cfg.IdleTimeout, "idle", d.IdleTimeout, "close a connection with no traffic for this long (more than -timeout); 0: off")
	fs.DurationVar(&cfg.ReadTimeout, "readtimeout", d.ReadTimeout, "close a connection whose request is not complete after this long; 0: off")
	fs.DurationVar(&cfg.WriteTimeout, "writetimeout", d.WriteTimeout, "close a connection that takes none of its replies for this long (a slow but steady reader is kept); 0: off")
	fs.IntVar(&cfg.MaxConns, "maxconns", d.MaxConns, "open connections; a new one beyond them is closed at once; 0: no limit")
	fs.DurationVar(&cfg.Grace, "grace", 0, "shutdown: time in-flight requests get; 0: timeout + 1s")
	fs.DurationVar(&cfg.Spin, "spin", 0, "how long an idle reactor looks for posted work before it sleeps; 0: adaptive (only after quick wake-ups by posted work), -1ns: off; more: always (worth it only with spare cores)")
	fs.IntVar(&cfg.Procs, "procs", 0, "GOMAXPROCS at least this (raised, never lowered); 0: reactors+1, a spare P so no loop loses its own while it sleeps; -1: leave it")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.StringVar(&o.admin, "admin", "", "serve net/http/pprof and Prometheus metrics on this address, like 127.0.0.1:7071 (loopback only); empty: off")
	fs.BoolVar(&o.adminPublic, "admin-public", false, "allow -admin on a non-loopback address (it exposes profiles and the command line)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	checks := []struct {
		flag string
		bad  bool
		want string
	}{
		{"reactors", cfg.Reactors < 1, "at least 1"},
		{"timeout", cfg.Timeout <= 0, "more than 0"},
		{"concurrent", cfg.Concurrent < 1, "at least 1"},
		{"rate", cfg.Rate < 1, "at least 1"},
		{"queue", cfg.Queue < -1, "0 (no queue), -1 (unlimited) or more"},
		{"burst", cfg.Burst < -1, "0 (none), -1 (unlimited) or more"},
		{"maxline", cfg.MaxLine < 16, "at least 16"},
		{"maxbulk", cfg.MaxBulk < 1 || cfg.MaxBulk > cfg.MaxRequest, "at least 1, at most -maxrequest"},
		{"maxargs", cfg.MaxArgs < 3, "at least 3"},
		{"maxrequest", cfg.MaxRequest < cfg.MaxLine, "at least -maxline"},
		{"pipeline", cfg.MaxPipeline < 1, "at least 1"},
		{"grace", cfg.Grace < 0, "0 (timeout + 1s) or more"},
		{"spin", cfg.Spin < 0 && cfg.Spin != reactor.NoSpin, "0 (adaptive), -1ns (off) or more"},
		{"procs", cfg.Procs < -1, "0 (reactors+1), -1 (leave GOMAXPROCS alone) or more"},
		{"idle", cfg.IdleTimeout < 0 || cfg.IdleTimeout > 0 && cfg.IdleTimeout <= cfg.Timeout, "0 (off) or more than -timeout"},
		{"readtimeout", cfg.ReadTimeout < 0, "0 (off) or more"},
		{"writetimeout", cfg.WriteTimeout < 0, "0 (off) or more"},
		{"maxconns", cfg.MaxConns < 0, "0 (no limit) or more"},
	}
	for _, c := range checks {
		if c.bad {
			return o, fmt.Errorf("-%s %s: must be %s", c.flag, fs.Lookup(c.flag).Value, c.want)
		}
	}
	if o.admin != "" {
		if err := checkAdminAddr(o.admin, o.adminPublic); err != nil {
			return o, err
		}
	} else if o.adminPublic {
		return o, fmt.Errorf("-admin-public: given without -admin")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if err == flag.ErrHelp {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "stepsd: %v\n", err)
		os.Exit(2)
	}
	cfg, cpuprofile := o.cfg, &o.cpuprofile

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatalf("stepsd: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatalf("stepsd: %v", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}

	// Signals are caught before the first connection can come in.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s, err := stepsd.Start(cfg)
	if err != nil {
		log.Fatalf("stepsd: %v", err)
	}
	log.Printf("stepsd: listening on %s (%d reactors)", s.Addr(), cfg.Reactors)
	if o.admin != "" {
		a, err := startAdmin(o.admin, s)
		if err != nil {
			_ = s.Shutdown(0)
			log.Fatalf("stepsd: %v", err)
		}
		defer a.Close()
		log.Printf("stepsd: admin on http://%s (/metrics, /debug/pprof/)", a.Addr())
	}

	got := <-sig
	log.Printf("stepsd: %v: shutting down, %d connections open", got, s.Conns())
	signal.Stop(sig) // a second signal kills at once
	if err := s.Shutdown(0); err != nil {
		log.Printf("stepsd: shutdown: %v", err)
		return
	}
	log.Printf("stepsd: stopped")
}
