package bench

import (
	"fmt"
	"runtime"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Real reactors in the scenarios that use them (the sync scenarios and
// ReactorScenarios): how many, and whether each loop is pinned to a CPU of
// its own. cmd/benchtable sets them from its -cpus and -pin flags before
// it runs anything; `go test -bench` uses the defaults.
var (
	// CPUs is how many real reactors a scenario starts (at least 1): with
	// Pin, reactor i runs on CPU i. It is also the GOMAXPROCS the
	// harness gives the peers, so that both sides get the same CPUs.
	CPUs = runtime.NumCPU()
	// Pin pins reactor i's loop thread to CPU i (reactor.Options{Pin:
	// true, CPU: i}); without it the loops are locked to threads of their
	// own but float.
	Pin = true
)

// ReactorOptions is the reactor.Options of reactor i under CPUs and Pin.
func ReactorOptions(i int) reactor.Options {
	if !Pin {
		return reactor.Options{CPU: -1}
	}
	return reactor.Options{Pin: true, CPU: i % runtime.NumCPU()}
}

// Placement says where the real reactors run, for reports: "2 reactors
// pinned to CPUs 0-1".
func Placement() string {
	if !Pin {
		return fmt.Sprintf("%d reactors, not pinned", CPUs)
	}
	if CPUs == 1 {
		return "1 reactor pinned to CPU 0"
	}
	return fmt.Sprintf("%d reactors pinned to CPUs 0-%d", CPUs, CPUs-1)
}

// StartGroup starts CPUs real reactors placed by ReactorOptions, as a
// reactor.Group.
func StartGroup() (*reactor.Group, error) { return StartGroupSpin(0) }

// StartGroupSpin is StartGroup with reactor.Options.Spin set to spin.
func StartGroupSpin(spin time.Duration) (*reactor.Group, error) {
	o := ReactorOptions(0)
	o.Spin = spin
	g, err := reactor.NewGroup(CPUs, o)
	if err != nil {
		return nil, err
	}
	g.Start()
	return g, nil
}

// startReactor starts one real reactor placed as reactor i; stop closes it
// and returns Run's error.
func startReactor(i int) (r *reactor.Reactor, stop func() error, err error) {
	r, err = reactor.New(ReactorOptions(i))
	if err != nil {
		return nil, nil, err
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run() }()
	return r, func() error {
		_ = r.Close()
		return <-ran
	}, nil
}
