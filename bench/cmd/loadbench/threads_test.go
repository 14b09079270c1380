package main

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseThreadStat(t *testing.T) {
	// A command name with a space and a ')' inside: fields are counted
	// from the last ')'. utime 250 and stime 50 ticks, processor 7.
	line := "4242 (lb (x) y) R 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 12 0 100 200 300 400 500 600 700 800 900 1000 0 0 0 0 0 0 17 7 0 0 0 0 0\n"
	got, err := parseThreadStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := threadStat{user: 2500 * time.Millisecond, sys: 500 * time.Millisecond, cpu: 7}
	if got != want {
		t.Fatalf("parseThreadStat = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"no parenthesis", "1 (x) R 1 2 3", "1 (x) R 1 2 3 4 5 6 7 8 9 10 u s 0 0 20 0 12 0 100 200 300 400 500 600 700 800 900 1000 0 0 0 0 0 0 17 7"} {
		if _, err := parseThreadStat([]byte(bad)); err == nil {
			t.Errorf("parseThreadStat(%q): no error", bad)
		}
	}
}

func TestSplitThreads(t *testing.T) {
	ms := time.Millisecond
	a := map[int]threadStat{
		10: {user: 100 * ms, sys: 100 * ms, cpu: 1},
		11: {user: 50 * ms, cpu: 2},
		12: {user: 30 * ms, cpu: 3}, // gone by b
		13: {user: 5 * ms, cpu: 4},  // idle
	}
	b := map[int]threadStat{
		10: {user: 400 * ms, sys: 700 * ms, cpu: 5}, // +300 user +600 sys: the hot one, now on CPU 5
		11: {user: 150 * ms, cpu: 2},                // +100
		13: {user: 5 * ms, cpu: 4},                  // +0: not counted
		14: {sys: 100 * ms, cpu: 6},                 // born after a: +100 from zero
	}
	s := splitThreads(a, b)
	if s.user != 400*ms || s.sys != 700*ms || s.threads != 3 || s.hotCPU != 5 {
		t.Fatalf("splitThreads = %+v, want user 400ms sys 700ms, 3 threads, hot on CPU 5", s)
	}
	if want := 900.0 / 1100; s.hotShare < want-1e-9 || s.hotShare > want+1e-9 {
		t.Fatalf("hot share %v, want %v", s.hotShare, want)
	}
	// Equal busiest threads: the lower id, whatever the map's order.
	tie := map[int]threadStat{21: {user: 10 * ms, cpu: 9}, 20: {user: 10 * ms, cpu: 8}}
	for range 20 {
		if s := splitThreads(nil, tie); s.hotCPU != 8 || s.hotShare != 0.5 {
			t.Fatalf("tie: %+v, want CPU 8 (thread 20), share 0.5", s)
		}
	}
	if s := splitThreads(a, a); s.hotCPU != -1 || s.threads != 0 || s.hotShare != 0 {
		t.Fatalf("no CPU used: %+v, want hot CPU -1, no threads", s)
	}
}

func TestSplitThreadsCounters(t *testing.T) {
	a := map[int]threadStat{
		1: {vol: 10, invol: 1, migrations: 3},
		2: {vol: 5, invol: 5, migrations: 0},
	}
	b := map[int]threadStat{
		1: {vol: 110, invol: 4, migrations: 9}, // +100 +3 +6
		3: {vol: 7, invol: 2, migrations: 1},   // born since: from zero
	}
	if s := splitThreads(a, b); s.vol != 107 || s.invol != 5 || s.migrations != 7 {
		t.Fatalf("counters %d/%d/%d, want 107 voluntary, 5 involuntary, 7 migrations", s.vol, s.invol, s.migrations)
	}
	// A reading without migrations (no sched file): the sum is not read.
	b[3] = threadStat{vol: 7, invol: 2, migrations: -1}
	if s := splitThreads(a, b); s.migrations != -1 || s.vol != 107 {
		t.Fatalf("migrations %d (want -1), voluntary %d (want 107)", s.migrations, s.vol)
	}
}

func TestParseSchedCounts(t *testing.T) {
	sched := "cat (28486, #threads: 1)\n-------\nse.sum_exec_runtime :   0.271485\nse.nr_migrations      :    12\nnr_switches : 40\nnr_voluntary_switches : 30\nnr_involuntary_switches :   10\n"
	if v, i, m := parseSchedCounts([]byte(sched), "nr_voluntary_switches", "nr_involuntary_switches", "se.nr_migrations"); v != 30 || i != 10 || m != 12 {
		t.Fatalf("sched: %d %d %d, want 30 10 12", v, i, m)
	}
	status := "Name:\tlb\nvoluntary_ctxt_switches:\t77\nnonvoluntary_ctxt_switches:\t3\n"
	if v, i, m := parseSchedCounts([]byte(status), "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches", ""); v != 77 || i != 3 || m != -1 {
		t.Fatalf("status: %d %d %d, want 77 3 -1", v, i, m)
	}
}

// TestThreadStatsSelf reads this process's threads while a goroutine
// locked to its thread spins: within 10s some thread must show CPU time,
// on a CPU that exists.
func TestThreadStatsSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/<pid>/task is Linux's")
	}
	a, err := threadStats(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	defer stop.Store(true)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for !stop.Load() { // spins on purpose: its thread must use CPU
		}
	}()
	var s threadSplit
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		b, err := threadStats(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if s = splitThreads(a, b); s.user+s.sys > 0 {
			break
		}
	}
	if s.threads < 1 || s.user+s.sys <= 0 || s.hotCPU < 0 || s.hotShare <= 0 || s.hotShare > 1 || s.vol < 0 || s.invol < 0 {
		t.Fatalf("a spinning thread's CPU time: %+v", s)
	}
}
