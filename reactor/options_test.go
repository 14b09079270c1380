//go:build linux

package reactor_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The zero Options pins nothing, every setting is either
// honoured or refused by New, and CONTRACT.md's CPU -1 still means no pinning.
func TestOptionsHonouredOrRefused(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	ok := []struct {
		name string
		opts reactor.Options
	}{
		{"zero value: not pinned", reactor.Options{}},
		{"CPU -1: not pinned", reactor.Options{CPU: -1}},
		{"Unlocked: not pinned", reactor.Options{Unlocked: true}},
		{"Tick, RingSize, Spin", reactor.Options{Tick: 2 * time.Millisecond, RingSize: 100, Spin: time.Microsecond}},
		{"NoSpin", reactor.Options{Spin: reactor.NoSpin}},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			// Two of them: the zero value used to pin both to CPU 0.
			for i := 0; i < 2; i++ {
				r, runErr := reactortest.StartRun(t, tt.opts)
				var set unix.CPUSet
				var err error
				reactortest.OnLoop(t, r, func() { err = unix.SchedGetaffinity(0, &set) })
				if err != nil {
					t.Fatal(err)
				}
				if set.Count() != allowed.Count() {
					t.Fatalf("loop thread restricted to %d of %d CPUs; want no pinning", set.Count(), allowed.Count())
				}
				reactortest.CloseAndWait(t, r, runErr)
			}
		})
	}
	refused := []struct {
		opts reactor.Options
		want string
	}{
		{reactor.Options{CPU: 1}, "without Pin"},
		{reactor.Options{CPU: -2}, "CPU -2"},
		{reactor.Options{Pin: true, CPU: -1}, "Pin with CPU -1"},
		{reactor.Options{Pin: true, CPU: runtime.NumCPU()}, "not a CPU this process may run on"},
		{reactor.Options{Pin: true, CPU: 100000}, "not a CPU this process may run on"},
		{reactor.Options{Pin: true, Unlocked: true}, "Unlocked with Pin"},
		{reactor.Options{Tick: -time.Millisecond}, "Tick"},
		{reactor.Options{RingSize: -1}, "RingSize"},
		{reactor.Options{Spin: -time.Second}, "Spin"},
	}
	for _, tt := range refused {
		r, err := reactor.New(tt.opts)
		if err == nil {
			_ = r.Close()
			t.Errorf("New(%+v) accepted, want an error about %q", tt.opts, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v): %v, want it to mention %q", tt.opts, err, tt.want)
		}
	}
	if _, err := reactor.NewGroup(2, reactor.Options{CPU: 3}); err == nil {
		t.Error("NewGroup accepted a CPU without Pin")
	}
}

// Pin pins, to the CPU asked for (CPU 0 included).
func TestOptionsPinCPU0(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil || !allowed.IsSet(0) {
		t.Skip("this process may not run on CPU 0")
	}
	r, err := reactor.New(reactor.Options{Pin: true})
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the pinned thread dies with this goroutine
		runErr <- r.Run()
	}()
	var set unix.CPUSet
	reactortest.OnLoop(t, r, func() { _ = unix.SchedGetaffinity(0, &set) })
	if set.Count() != 1 || !set.IsSet(0) {
		t.Fatalf("affinity %d CPUs, CPU 0 = %v; want only CPU 0", set.Count(), set.IsSet(0))
	}
	reactortest.CloseAndWait(t, r, runErr)
}
