// Command loadgen loads one running RESP server (stepsd started
// with make run, or any peer) and prints requests/s and latency quantiles:
// the tool to use beside a server's -cpuprofile.
//
//	go run ./cmd/loadgen -addr 127.0.0.1:7070 -conns 16 -pipeline 16 -duration 5s
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/asyncsteps/asyncsteps/bench/netbench"
)

func main() {
	var cfg netbench.LoadConfig
	flag.StringVar(&cfg.Addr, "addr", "127.0.0.1:7070", "server address")
	flag.IntVar(&cfg.Conns, "conns", 16, "connections")
	flag.IntVar(&cfg.Pipeline, "pipeline", 1, "requests in flight per connection")
	flag.IntVar(&cfg.Requests, "requests", 0, "stop after this many requests (0: time only)")
	flag.DurationVar(&cfg.Duration, "duration", 5*time.Second, "measured time")
	flag.DurationVar(&cfg.Warmup, "warmup", 300*time.Millisecond, "unmeasured time first")
	flag.Parse()
	res, err := netbench.RunLoad(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
	fmt.Printf("%d conns × pipeline %d: %.0f req/s, p50 %v, p99 %v, p99.9 %v, %d requests, %d errors %v\n",
		cfg.Conns, cfg.Pipeline, res.ReqPerSec, res.P50, res.P99, res.P999, res.Requests, res.Errors, res.ErrCodes)
}
