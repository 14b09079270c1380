package bench

import (
	"os"
	"strconv"
)

// BENCH_REACTORS sets CPUs (how many real reactors a scenario starts)
// for `go test -bench`, apart from GOMAXPROCS: 16 reactors on a 2-CPU
// machine (pinned i modulo the CPUs) show what grows with the reactor
// count without a 16-core machine. benchtable's -cpus sets both.
func init() {
	if v, err := strconv.Atoi(os.Getenv("BENCH_REACTORS")); err == nil && v > 0 {
		CPUs = v
	}
}
