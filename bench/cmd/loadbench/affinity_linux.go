package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// allowedCPUs returns the CPUs this process may run on, ordered by
// package and core (then number), so that the first CPUs that -server-cpus
// auto and half take are whole cores where the machine has hyperthreads
// and says so in /sys (by number where it does not).
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	cpus := cpusOf(&set)
	type place struct{ pkg, core, cpu int }
	at := make(map[int]place, len(cpus))
	for _, c := range cpus {
		at[c] = place{topo(c, "physical_package_id"), topo(c, "core_id"), c}
	}
	slices.SortFunc(cpus, func(a, b int) int {
		pa, pb := at[a], at[b]
		if pa.pkg != pb.pkg {
			return pa.pkg - pb.pkg
		}
		if pa.core != pb.core {
			return pa.core - pb.core
		}
		return a - b
	})
	return cpus, nil
}

// topo reads /sys/devices/system/cpu/cpuN/topology/name; a CPU whose
// topology cannot be read gets its own number, a core of its own.
func topo(cpu int, name string) int {
	b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/%s", cpu, name))
	if err != nil {
		return cpu
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return cpu
	}
	return v
}

func cpusOf(set *unix.CPUSet) []int {
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

func cpuSetOf(cpus []int) *unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return &set
}

// pinSelf moves every thread of this process onto cpus and sizes
// GOMAXPROCS to them. A thread inherits its creator's mask, so once every
// thread is moved, the threads the runtime starts later are on cpus too;
// the passes repeat until one finds no thread it had not moved (a thread
// started during a pass by one not yet moved).
func pinSelf(cpus []int) error {
	set := cpuSetOf(cpus)
	done := map[int]bool{}
	for pass := 0; ; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		moved := false
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			// ESRCH: the thread exited since the listing.
			if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("sched_setaffinity of thread %d to CPUs %s: %w", tid, fmtCPUList(cpus), err)
			}
			done[tid], moved = true, true
		}
		if !moved {
			break
		}
		if pass > 100 {
			return errors.New("threads keep appearing while they are moved to the load's CPUs")
		}
	}
	runtime.GOMAXPROCS(len(cpus))
	return nil
}

// startOn starts cmd on cpus (nil: where this process runs), as taskset
// would: from a thread of its own whose mask is cpus, so that the child's
// mask is cpus from its first instruction and a Go child's runtime sizes
// GOMAXPROCS to them. That thread is never given back to the runtime: its
// goroutine exits still locked to it, and Go then ends the thread; and a
// locked thread never starts the runtime's other threads (newm hands that
// to its template thread), so nothing else inherits its mask.
func startOn(cmd *exec.Cmd, cpus []int) error {
	if cpus == nil {
		return cmd.Start()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.SchedSetaffinity(0, cpuSetOf(cpus)); err != nil {
			done <- fmt.Errorf("sched_setaffinity to CPUs %s: %w", fmtCPUList(cpus), err)
			return
		}
		done <- cmd.Start()
	}()
	return <-done
}

// pidCPUs returns the CPUs process pid may run on (its main thread's mask).
func pidCPUs(pid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return nil, err
	}
	return cpusOf(&set), nil
}
