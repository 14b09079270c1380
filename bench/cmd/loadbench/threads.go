package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// A server child's threads, round by round: where its CPU time went, on
// which CPU its busiest thread ran, how often they slept, were preempted
// and moved. One reactor's cells keep one thread busy; on a many-core
// machine the same cell's rounds differ by up to 20% in CPU per request,
// for stepsd and the gnet peer alike, in two clusters
// (profiles/notes/2026-11-28-srv5-round12.md). These figures, kept in
// -json's rounds, tell whether a slow round ran its busiest thread on
// another CPU, spread its work over more threads, slept or moved more,
// or spent more of it in the kernel.

// threadStat is one thread's CPU time so far and the CPU it last ran on,
// from /proc/<pid>/task/<tid>/stat, and its context switches and
// migrations between CPUs so far, from .../sched (the scheduler's debug
// file; where it is missing, the switches come from .../status and
// migrations is -1).
type threadStat struct {
	user, sys  time.Duration
	cpu        int
	vol, invol int64
	migrations int64
}

// threadStats reads every thread of process pid; a thread that ends while
// they are read is left out.
func threadStats(pid int) (map[int]threadStat, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[int]threadStat, len(ents))
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(dir + "/" + e.Name() + "/stat")
		if err != nil {
			continue // the thread ended
		}
		st, err := parseThreadStat(b)
		if err != nil {
			return nil, fmt.Errorf("%s/%d/stat: %w", dir, tid, err)
		}
		st.migrations = -1
		if b, err := os.ReadFile(dir + "/" + e.Name() + "/sched"); err == nil {
			st.vol, st.invol, st.migrations = parseSchedCounts(b, "nr_voluntary_switches", "nr_involuntary_switches", "se.nr_migrations")
		} else if b, err := os.ReadFile(dir + "/" + e.Name() + "/status"); err == nil {
			st.vol, st.invol, _ = parseSchedCounts(b, "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches", "")
		}
		out[tid] = st
	}
	return out, nil
}

// parseThreadStat reads utime (field 14), stime (15) and processor (39) of
// a stat line. The command name, field 2, is in parentheses and may hold
// spaces and parentheses: the fields are counted from its last ')'.
func parseThreadStat(b []byte) (threadStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return threadStat{}, fmt.Errorf("no command name in %q", b)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): field k is f[k-3].
	if len(f) < 37 {
		return threadStat{}, fmt.Errorf("%d fields", len(f)+2)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	cpu, err3 := strconv.Atoi(f[36])
	if err1 != nil || err2 != nil || err3 != nil {
		return threadStat{}, fmt.Errorf("utime %q stime %q processor %q", f[11], f[12], f[36])
	}
	return threadStat{
		user: time.Duration(ut) * time.Second / clockTicks,
		sys:  time.Duration(st) * time.Second / clockTicks,
		cpu:  cpu,
	}, nil
}

// parseSchedCounts reads three counters of a "name: value" or
// "name : value" file by name; a counter not found (or asked as "") is -1.
func parseSchedCounts(b []byte, a, c, m string) (va, vc, vm int64) {
	va, vc, vm = -1, -1, -1
	for line := range strings.SplitSeq(string(b), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case a:
			va = n
		case c:
			vc = n
		case m:
			if m != "" {
				vm = n
			}
		}
	}
	return va, vc, vm
}

// threadSplit is what the threads did between two readings a and b: the
// user and system time of them all, how many used any CPU, and the busiest
// one's share of the total and the CPU it was on at b (-1 when no thread
// used any), and the threads' voluntary and involuntary context switches
// and migrations (-1 where a reading lacks them). A thread born after a
// counts from zero; one gone by b is not counted (its time is in neither
// reading's sum of live threads).
type threadSplit struct {
	user, sys              time.Duration
	threads                int
	hotShare               float64
	hotCPU                 int
	vol, invol, migrations int64
}

func splitThreads(a, b map[int]threadStat) threadSplit {
	s := threadSplit{hotCPU: -1}
	var hot time.Duration
	hotTID := 0
	for tid, t1 := range b {
		t0, seen := a[tid]
		s.vol = addCount(s.vol, t1.vol, t0.vol, seen)
		s.invol = addCount(s.invol, t1.invol, t0.invol, seen)
		s.migrations = addCount(s.migrations, t1.migrations, t0.migrations, seen)
		du, ds := t1.user-t0.user, t1.sys-t0.sys
		if du+ds <= 0 {
			continue
		}
		s.user += du
		s.sys += ds
		s.threads++
		// Ties go to the lower thread id, so the choice does not depend
		// on the map's order.
		if d := du + ds; d > hot || (d == hot && tid < hotTID) {
			hot, hotTID, s.hotCPU = d, tid, t1.cpu
		}
	}
	if total := s.user + s.sys; total > 0 {
		s.hotShare = float64(hot) / float64(total)
	}
	return s
}

// addCount adds a thread's counter from v0 (its first reading, or zero if
// it was born since: seen false) to v1 to sum; -1 in sum or in a reading
// makes the sum -1 (not read).
func addCount(sum, v1, v0 int64, seen bool) int64 {
	if !seen {
		v0 = 0
	}
	if sum < 0 || v1 < 0 || v0 < 0 {
		return -1
	}
	return sum + v1 - v0
}
