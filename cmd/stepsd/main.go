// Command stepsd is a line-protocol key-value server that runs one
// AsyncSteps flow per request on per-core reactors.
//
//	SET key value   → OK
//	GET key         → VALUE value | NOTFOUND
//	DEL key         → OK | NOTFOUND
//	ECHO text       → ECHO text
//	SLEEP ms        → OK, after ms milliseconds
//
// Any failure answers "ERR Code info" with a FutoIn code: InvalidRequest,
// Timeout or DefenseRejected. SIGINT or SIGTERM stops it gracefully.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

func main() {
	d := stepsd.DefaultConfig()
	cfg := d
	flag.StringVar(&cfg.Addr, "addr", d.Addr, "listen address")
	flag.IntVar(&cfg.Reactors, "reactors", d.Reactors, "reactors, one OS thread each")
	flag.BoolVar(&cfg.Pin, "pin", false, "pin reactor i to CPU i")
	flag.DurationVar(&cfg.Timeout, "timeout", d.Timeout, "per-request timeout")
	flag.IntVar(&cfg.Concurrent, "concurrent", d.Concurrent, "Limiter: requests executing at once")
	flag.IntVar(&cfg.Rate, "rate", d.Rate, "Limiter: requests started per second")
	flag.IntVar(&cfg.Queue, "queue", d.Queue, "Limiter: requests waiting to start (negative: none)")
	flag.IntVar(&cfg.MaxLine, "maxline", d.MaxLine, "longest request line in bytes; longer closes the connection")
	flag.IntVar(&cfg.MaxPipeline, "pipeline", d.MaxPipeline, "requests in flight per connection before it stops reading")
	flag.DurationVar(&cfg.Grace, "grace", 0, "shutdown: time in-flight requests get (default: timeout + 1s)")
	flag.DurationVar(&cfg.Spin, "spin", 0, "how long an idle reactor looks for work before it sleeps (worth it only with spare cores)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "stepsd: unexpected arguments %q\n", flag.Args())
		flag.Usage()
		os.Exit(2)
	}

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

	got := <-sig
	log.Printf("stepsd: %v: shutting down, %d connections open", got, s.Conns())
	signal.Stop(sig) // a second signal kills at once
	if err := s.Shutdown(0); err != nil {
		log.Printf("stepsd: shutdown: %v", err)
		return
	}
	log.Printf("stepsd: stopped")
}
