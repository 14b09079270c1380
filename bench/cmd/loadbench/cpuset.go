package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// On a machine of many cores, a server and the load generator that share
// every CPU disturb each other in ways that change from one run to the
// next: the kernel places the generator's threads on the CPUs the server's
// loops were using, both Go runtimes size GOMAXPROCS to the whole machine,
// and one server's cell can read 1.7x another run of the same cell.
// -server-cpus and -load-cpus give each side CPUs of its own, the same for
// every server (stepsd, the peers, redis-server): each server's child
// process is started on the server's CPUs (so its Go runtime sees only
// them), and this process, the load generator, and the redis-benchmark it
// starts run on the load's.

// cpuPlan is where the servers and the load run; nil sets: anywhere.
type cpuPlan struct {
	server, load []int
}

// on reports whether the plan restricts anything.
func (p cpuPlan) on() bool { return p.server != nil || p.load != nil }

// cpuAuto is -server-cpus auto: the first -loops CPUs this process may run
// on, one per reactor or event loop.
const cpuAuto = "auto"

// cpuHalf is -server-cpus half: the first half of the CPUs this process
// may run on (rounded down), whatever -loops (at most that many), so that
// the servers have the same CPUs at every reactor count, and so has the
// load generator (the other half).
const cpuHalf = "half"

// cpuRest is -load-cpus rest (also its empty default when -server-cpus is
// set): every CPU this process may run on that the server does not get.
const cpuRest = "rest"

// planCPUs reads -server-cpus and -load-cpus against allowed, the CPUs this
// process may run on, in the order auto and half take them (allowedCPUs:
// the hyperthreads of a core together), for loops reactors. Both empty: no plan.
// The two sets are disjoint and neither is empty; a machine with too few
// CPUs for them is an error that says so, never a silent fallback to
// sharing.
func planCPUs(allowed []int, loops int, serverSpec, loadSpec string) (cpuPlan, error) {
	serverSpec, loadSpec = strings.TrimSpace(serverSpec), strings.TrimSpace(loadSpec)
	if serverSpec == "" && loadSpec == "" {
		return cpuPlan{}, nil
	}
	have := fmt.Sprintf("this process may run on %d CPUs (%s)", len(allowed), fmtCPUList(allowed))
	among := fmt.Sprintf("among the %d CPUs this process may run on (%s)", len(allowed), fmtCPUList(allowed))
	var p cpuPlan
	switch serverSpec {
	case "", cpuRest:
		// The rest of what the load does not take, below.
	case cpuAuto:
		if loops < 1 {
			return cpuPlan{}, fmt.Errorf("-server-cpus auto needs -loops of at least 1")
		}
		if len(allowed) < loops+1 {
			return cpuPlan{}, fmt.Errorf("-server-cpus auto: %d loops/reactors need %d CPUs for the server and at least 1 for the load generator, but %s; run fewer -loops or without -server-cpus (server and load then share the CPUs)", loops, loops, have)
		}
		p.server = sorted(allowed[:loops])
	case cpuHalf:
		half := len(allowed) / 2
		if half < max(loops, 1) {
			return cpuPlan{}, fmt.Errorf("-server-cpus half: %d loops/reactors need %d CPUs, half of them for the server, but %s; run fewer -loops, or name the CPUs (-server-cpus LIST) to give the server more than half", loops, 2*max(loops, 1), have)
		}
		p.server = sorted(allowed[:half])
	default:
		set, err := parseCPUList(serverSpec)
		if err != nil {
			return cpuPlan{}, fmt.Errorf("-server-cpus: %w", err)
		}
		if bad := missing(set, allowed); bad != nil {
			return cpuPlan{}, fmt.Errorf("-server-cpus %s: CPUs %s are not %s", serverSpec, fmtCPUList(bad), among)
		}
		p.server = set
	}
	switch loadSpec {
	case "", cpuRest:
		if p.server == nil {
			return cpuPlan{}, fmt.Errorf("-load-cpus %s needs -server-cpus auto or a list (one of the two must say which CPUs)", cpuRest)
		}
		p.load = sorted(missing(allowed, p.server))
		if p.load == nil {
			return cpuPlan{}, fmt.Errorf("-server-cpus %s takes every CPU: no CPU is left for the load generator (%s)", serverSpec, have)
		}
	case cpuAuto, cpuHalf:
		return cpuPlan{}, fmt.Errorf("-load-cpus takes a CPU list or %q, not %q", cpuRest, loadSpec)
	default:
		set, err := parseCPUList(loadSpec)
		if err != nil {
			return cpuPlan{}, fmt.Errorf("-load-cpus: %w", err)
		}
		if bad := missing(set, allowed); bad != nil {
			return cpuPlan{}, fmt.Errorf("-load-cpus %s: CPUs %s are not %s", loadSpec, fmtCPUList(bad), among)
		}
		p.load = set
	}
	if p.server == nil { // -server-cpus "" or rest: what the load leaves
		p.server = missing(allowed, p.load)
		if p.server == nil {
			return cpuPlan{}, fmt.Errorf("-load-cpus %s takes every CPU: no CPU is left for the server (%s)", loadSpec, have)
		}
	}
	if both := missing(p.server, missing(p.server, p.load)); both != nil {
		return cpuPlan{}, fmt.Errorf("-server-cpus and -load-cpus share CPUs %s: the two sets must be disjoint", fmtCPUList(both))
	}
	return p, nil
}

func sorted(set []int) []int {
	s := slices.Clone(set)
	slices.Sort(s)
	return s
}

// missing returns the members of a that are not in b, in a's order, or nil.
func missing(a, b []int) []int {
	var out []int
	for _, c := range a {
		if !slices.Contains(b, c) {
			out = append(out, c)
		}
	}
	return out
}

// parseCPUList reads a Linux CPU list, as in /sys/devices/system/cpu/online
// and taskset -c: comma-separated CPU numbers and ranges, "0-3,8,10-11".
// It returns the CPUs sorted; a duplicate, a descending range or a number
// that is not one is an error.
func parseCPUList(s string) ([]int, error) {
	var set []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		los, his, isRange := strings.Cut(f, "-")
		lo, err1 := strconv.Atoi(los)
		hi, err2 := lo, error(nil)
		if isRange {
			hi, err2 = strconv.Atoi(his)
		}
		if err1 != nil || err2 != nil || lo < 0 || hi < lo {
			return nil, fmt.Errorf("%q is not a CPU list (CPU numbers and ascending ranges, comma-separated, such as 0-3,8)", s)
		}
		if hi-lo >= 1<<16 {
			return nil, fmt.Errorf("%q: range %s is too large", s, f)
		}
		for c := lo; c <= hi; c++ {
			if slices.Contains(set, c) {
				return nil, fmt.Errorf("%q names CPU %d twice", s, c)
			}
			set = append(set, c)
		}
	}
	slices.Sort(set)
	return set, nil
}

// fmtCPUList writes sorted CPUs as a CPU list, ranges folded: "0-3,8".
func fmtCPUList(set []int) string {
	var b strings.Builder
	for i := 0; i < len(set); {
		j := i
		for j+1 < len(set) && set[j+1] == set[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(set[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(set[j]))
		}
		i = j + 1
	}
	return b.String()
}

// checkPin refuses -pin with servers' CPUs that stepsd's pinned reactors
// would leave: stepsd -pin pins reactor i to CPU i modulo the number of
// CPUs its process may use (reactor.NewGroup), by CPU number, and a thread
// may be moved to any CPU, not only those of its process's mask; with the
// servers on 8-15, or on 0-3,8-11 (half, hyperthread pairs), some reactors
// would run on the load generator's CPUs.
func checkPin(server []int, loops int) error {
	if server == nil {
		return nil
	}
	var out []int
	for i := range loops {
		if c := i % len(server); !slices.Contains(server, c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if out != nil {
		slices.Sort(out)
		return fmt.Errorf("-pin with -server-cpus %s: stepsd would pin reactors to CPUs %s (reactor i to CPU i modulo the %d CPUs its process may use), outside the servers' CPUs; give the servers CPUs 0-%d or more, or run without -pin", fmtCPUList(server), fmtCPUList(out), len(server), min(loops, len(server))-1)
	}
	return nil
}
