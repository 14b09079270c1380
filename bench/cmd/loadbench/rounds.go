package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asyncsteps/asyncsteps/bench/netbench"
)

// One 1s cell per server is not a verdict on many cores: the same server in
// the same cell reads up to 1.7x apart from one run to the next. -rounds R
// runs every cell R times per server, the servers in turn within a round
// (the first one rotating, so none always runs first), every server's child
// up for the whole matrix; a cell's figures are the medians of its rounds,
// and each server's ratio to gnet is the median of its per-round ratios,
// each against gnet's run of the same round, minutes apart from nothing.

// roundResult is one server's run of one cell in one round.
type roundResult struct {
	Round       int
	Requests    int64
	Errors      int64
	ElapsedSec  float64
	ReqPerSec   float64
	P50us       float64
	P99us       float64
	P999us      float64
	CPUSec      float64 // the server's utime+stime over the measured time
	CPUPerReqUs float64
	// LoadBusy is the load generator's (this process's) CPU time over the
	// measured time, as a share of the CPUs it may use: near 1, the cell
	// measures the generator rather than the server.
	LoadBusy   float64
	RSSEndMiB  float64
	RSSPeakMiB float64
	// The server's threads over the measured time (threads.go), from
	// /proc/<pid>/task: user and system CPU seconds, how many threads
	// used any, the busiest one's share of the CPU and the CPU it was on
	// at the end (-1 where not read), and the threads' voluntary and
	// involuntary context switches and migrations between CPUs (-1 where
	// not read). One reactor's cells keep one thread busy: a round slower
	// than its cell's others shows here whether it moved, spread, slept
	// or spent more in the kernel.
	UserSec       float64 `json:",omitempty"`
	SysSec        float64 `json:",omitempty"`
	Threads       int     `json:",omitempty"`
	HotShare      float64 `json:",omitempty"`
	HotCPU        int
	VolSwitches   int64
	InvolSwitches int64
	Migrations    int64
	Error         string `json:",omitempty"`

	errCodes map[string]int64
}

// loadCPUs is how many CPUs the load generator may use.
func loadCPUs() int {
	if cpus.load != nil {
		return len(cpus.load)
	}
	return runtime.GOMAXPROCS(0)
}

// runRound runs cell c once against ch.
func runRound(rep *report, ch *child, c cell, p plan, round int) roundResult {
	if err := ch.resetPeak(); err != nil {
		rep.note("%s: VmHWM cannot be reset (%v): the cells' peaks are the child's peak so far", ch.server, err)
	}
	var cpu0, cpu1, self0, self1 time.Duration
	var cpuErr0, cpuErr1, thErr0, thErr1 error
	var th0, th1 map[int]threadStat
	self := os.Getpid()
	res, err := netbench.RunLoad(netbench.LoadConfig{
		Addr: ch.addr, Conns: c.conns, Pipeline: c.pipeline,
		Requests: p.requests, Duration: p.duration, Warmup: p.warmup,
		OnMeasure: func() {
			cpu0, cpuErr0 = ch.cpu()
			th0, thErr0 = threadStats(ch.cmd.Process.Pid)
			self0, _ = procCPU(self)
		},
		OnStop: func() {
			cpu1, cpuErr1 = ch.cpu()
			th1, thErr1 = threadStats(ch.cmd.Process.Pid)
			self1, _ = procCPU(self)
		},
	})
	rss, hwm, _ := ch.mem()
	r := roundResult{
		Round: round, Requests: res.Requests, Errors: res.Errors, errCodes: res.ErrCodes,
		ElapsedSec: res.Elapsed.Seconds(), ReqPerSec: res.ReqPerSec,
		P50us: us(res.P50), P99us: us(res.P99), P999us: us(res.P999),
		RSSEndMiB: mib(rss), RSSPeakMiB: mib(hwm),
		HotCPU: -1, VolSwitches: -1, InvolSwitches: -1, Migrations: -1,
	}
	if thErr0 == nil && thErr1 == nil && th0 != nil && th1 != nil {
		ts := splitThreads(th0, th1)
		r.UserSec, r.SysSec, r.Threads = ts.user.Seconds(), ts.sys.Seconds(), ts.threads
		r.HotShare, r.HotCPU = ts.hotShare, ts.hotCPU
		r.VolSwitches, r.InvolSwitches, r.Migrations = ts.vol, ts.invol, ts.migrations
	}
	if cpuErr0 == nil && cpuErr1 == nil && res.Requests > 0 {
		r.CPUSec = (cpu1 - cpu0).Seconds()
		r.CPUPerReqUs = us(cpu1-cpu0) / float64(res.Requests)
	} else if cpuErr0 != nil || cpuErr1 != nil {
		rep.note("%s pipeline=%d conns=%d: server CPU not read: %v", ch.server, c.pipeline, c.conns, errors.Join(cpuErr0, cpuErr1))
	}
	if res.Elapsed > 0 && self1 > self0 {
		r.LoadBusy = (self1 - self0).Seconds() / (res.Elapsed.Seconds() * float64(loadCPUs()))
	}
	if err != nil {
		r.Error = err.Error()
		rep.failed = true
		rep.note("%s pipeline=%d conns=%d: %v", ch.server, c.pipeline, c.conns, err)
	}
	if res.Errors > 0 {
		rep.wrong = true
		rep.note("%s pipeline=%d conns=%d: %d wrong replies (ERR codes %v)", ch.server, c.pipeline, c.conns, res.Errors, res.ErrCodes)
	}
	roundOf := ""
	if p.rounds > 1 {
		roundOf = fmt.Sprintf(" round %d/%d", round+1, p.rounds)
	}
	fmt.Fprintf(os.Stderr, "  pipeline=%-2d conns=%-3d%s %s %10.0f req/s  p99 %s  server CPU %.2f µs/req  load %.0f%% of %d CPUs\n",
		c.pipeline, c.conns, roundOf, ch.server, res.ReqPerSec, fmtLatency(us(res.P99)), r.CPUPerReqUs, 100*r.LoadBusy, loadCPUs())
	return r
}

// runMatrices runs every cell against one child per server, all of them up
// at once: each cell p.rounds times, the servers in turn within a round.
func runMatrices(rep *report, servers []string, loops int, p plan) {
	type live struct {
		ch  *child
		mem *memResult
	}
	mems := make([]memResult, len(servers))
	var up []live
	for i, s := range servers {
		mems[i] = memResult{Server: s, Scenario: scenarioMatrix}
		var extra []string
		if profilePrefix != "" && s == serverStepsd {
			extra = append(extra, "-profile="+profilePrefix)
		}
		if cpuProfileDir != "" {
			extra = append(extra, "-cpuprofile="+filepath.Join(cpuProfileDir, s+".cpu.prof"))
		}
		ch, err := startChild(s, loops, extra...)
		if err != nil {
			rep.failed = true
			rep.note("%s: not run: %v", s, err)
			mems[i].Error = err.Error()
			continue
		}
		mems[i].RSSBeforeMiB = mib(ch.rss())
		up = append(up, live{ch, &mems[i]})
	}
	fmt.Fprintf(os.Stderr, "throughput matrix: %s, %d cells × %d rounds, about %v\n",
		strings.Join(servers, ", "), len(p.cells), p.rounds, p.matrixTime(len(up)).Round(time.Second))
	if p.childWarmup > 0 {
		// A fresh process's first load pays what later ones do not (its
		// heap and stacks grow, its threads start): each child first
		// serves the matrix's largest cell, unmeasured.
		var big cell
		for _, c := range p.cells {
			big = cell{max(big.pipeline, c.pipeline), max(big.conns, c.conns)}
		}
		for _, l := range up {
			if _, err := netbench.RunLoad(netbench.LoadConfig{Addr: l.ch.addr, Conns: big.conns, Pipeline: big.pipeline, Duration: p.childWarmup}); err != nil {
				rep.failed = true
				rep.note("%s: -child-warmup: %v", l.ch.server, err)
			}
		}
	}
	for ci, c := range p.cells {
		runs := map[string][]roundResult{}
		for round := range p.rounds {
			for k := range up {
				l := up[(ci+round+k)%len(up)]
				r := runRound(rep, l.ch, c, p, round)
				runs[l.ch.server] = append(runs[l.ch.server], r)
				l.mem.Requests += r.Requests
				l.mem.Errors += r.Errors
				l.mem.RSSPeakMiB = max(l.mem.RSSPeakMiB, r.RSSPeakMiB)
			}
		}
		for _, l := range up {
			rs := runs[l.ch.server]
			l.mem.RSSEndMiB = rs[len(rs)-1].RSSEndMiB
			rep.Throughput = append(rep.Throughput, aggregate(l.ch.server, c, rs, runs[gnetOf(l.ch.server, servers)], p.rounds > 1))
		}
	}
	time.Sleep(p.settle)
	for _, l := range up {
		l.mem.RSSAfterMiB = mib(l.ch.rss())
		if err := l.ch.stop(); err != nil {
			rep.failed = true
			rep.note("%v", err)
		}
	}
	rep.Memory = append(rep.Memory, mems...)
}

// matrixTime is about how long the throughput matrix takes with n servers.
func (p plan) matrixTime(n int) time.Duration {
	return time.Duration(len(p.cells)*p.rounds*n)*(p.warmup+p.duration) + time.Duration(n)*p.childWarmup
}

// aggregate makes a cell's row of one server from its rounds: req/s and CPU
// per request are their medians; latencies those of the median round;
// requests and errors the sums; the RSS peak the highest. gnet holds gnet's
// rounds of the same cell, paired by index with rs: the ratios are the
// medians of the per-round ratios. keep keeps the rounds in the result (for
// -json).
func aggregate(server string, c cell, rs, gnet []roundResult, keep bool) cellResult {
	out := cellResult{Server: server, Pipeline: c.pipeline, Conns: c.conns}
	if len(rs) == 0 {
		return out
	}
	rates := make([]float64, len(rs))
	var costs, busy, ratios, cpuRatios []float64
	for i, r := range rs {
		rates[i] = r.ReqPerSec
		out.Requests += r.Requests
		out.Errors += r.Errors
		for code, n := range r.errCodes {
			if out.ErrCodes == nil {
				out.ErrCodes = map[string]int64{}
			}
			out.ErrCodes[code] += n
		}
		out.CPUSec += r.CPUSec
		out.RSSPeakMiB = max(out.RSSPeakMiB, r.RSSPeakMiB)
		if r.Error != "" && out.Error == "" {
			out.Error = r.Error
		}
		if r.CPUPerReqUs > 0 {
			costs = append(costs, r.CPUPerReqUs)
		}
		if r.LoadBusy > 0 {
			busy = append(busy, r.LoadBusy)
		}
		if i < len(gnet) {
			if g := gnet[i].ReqPerSec; g > 0 {
				ratios = append(ratios, r.ReqPerSec/g)
			}
			if g := gnet[i].CPUPerReqUs; g > 0 && r.CPUPerReqUs > 0 {
				cpuRatios = append(cpuRatios, r.CPUPerReqUs/g)
			}
		}
	}
	mid := rs[medianIndex(rates)]
	out.ElapsedSec = mid.ElapsedSec
	out.P50us, out.P99us, out.P999us = mid.P50us, mid.P99us, mid.P999us
	out.RSSEndMiB = rs[len(rs)-1].RSSEndMiB
	out.ReqPerSec = median(rates)
	out.ReqPerSecMin, out.ReqPerSecMax = slices.Min(rates), slices.Max(rates)
	out.CPUPerReqUs = median(costs)
	out.LoadBusy = median(busy)
	out.LoadBusyMax = maxOf(busy)
	if len(ratios) > 0 {
		out.RatioVsGnet = median(ratios)
		out.RatioMin, out.RatioMax = slices.Min(ratios), slices.Max(ratios)
		out.PairedRounds = len(ratios)
	}
	out.CPUVsGnet = median(cpuRatios)
	if keep {
		out.Rounds = rs
	}
	return out
}

// median returns the median of xs (the mean of the two middle values of
// an even count), 0 for none. xs is not changed.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// medianIndex returns the index in xs of its median value (the lower of
// the two middle ones of an even count; the first of equal values), -1 for
// none: the round whose latencies a row shows.
func medianIndex(xs []float64) int {
	if len(xs) == 0 {
		return -1
	}
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	return idx[(len(xs)-1)/2]
}

func maxOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return slices.Max(xs)
}

// fmtRange shows lo and hi around mid as percentages: "-4%/+7%".
func fmtRange(lo, mid, hi float64) string {
	if mid <= 0 || math.IsNaN(lo) || math.IsNaN(hi) {
		return "-"
	}
	return fmt.Sprintf("%+.0f%%/%+.0f%%", 100*(lo/mid-1), 100*(hi/mid-1))
}

// printMethod prints, under the run's first line, how the cells were run
// where -rounds, -child-warmup or the CPU sets are on (nothing otherwise: the output of a
// plain run stays as it was).
func printMethod(w io.Writer, rep *report, p plan) {
	if p.rounds <= 1 && !cpus.on() && p.childWarmup == 0 {
		return
	}
	var parts []string
	if p.childWarmup > 0 {
		parts = append(parts, fmt.Sprintf("-child-warmup %v: each server's child first served the largest cell, unmeasured", p.childWarmup))
	}
	if p.rounds > 1 {
		parts = append(parts, fmt.Sprintf("-rounds %d: each cell %d times per server, the servers in turn within a round (the first rotating), every server's child up for the whole matrix; req/s and CPU µs/req are the medians of the rounds, ratio vs gnet and CPU vs gnet the medians of the per-round ratios to gnet's run in the same round, latencies the median round's, RSS peak the highest; req/s range: the lowest and highest round against the median; ratio range: the lowest and highest per-round ratio", p.rounds, p.rounds))
	}
	if cpus.on() {
		procs := childGOMAXPROCS(len(cpus.server), childProcs, os.Getenv("GOMAXPROCS"))
		parts = append(parts, fmt.Sprintf("servers' processes on CPUs %s (%d, %s), load generator on CPUs %s (%d, GOMAXPROCS %d); load CPU: the generator's CPU time over the measured time, as a share of its CPUs (near 100%%: the cell measures the generator)",
			fmtCPUList(cpus.server), len(cpus.server), procs, fmtCPUList(cpus.load), len(cpus.load), len(cpus.load)))
	}
	fmt.Fprintf(w, "method: %s\n\n", strings.Join(parts, "; "))
}

// loadBound is the load generator's share of its CPUs above which a cell's
// figures are said to be the generator's rather than the server's.
const loadBound = 0.9

// printSummary prints, with -rounds above 1, CPU sets or -target given,
// one line per server beside gnet: its lowest median ratio to gnet's
// req/s, and the cells below target; and a line for the cells where the
// load generator was nearly saturated (with CPU sets, whatever the rounds:
// the table's load CPU column alone would leave that to the reader). A
// plain run prints none, as before.
func printSummary(w io.Writer, rep *report, servers []string, p plan, target float64) {
	if p.rounds <= 1 && !cpus.on() && !p.targetSet {
		return
	}
	fmt.Fprintln(w)
	var bound []string
	for _, s := range servers {
		var below, all []string
		low, lowCell := math.Inf(1), ""
		for _, r := range rep.Throughput {
			if r.Server != s {
				continue
			}
			name := fmt.Sprintf("P%dc%d", r.Pipeline, r.Conns)
			if cpus.on() && r.LoadBusyMax >= loadBound {
				bound = append(bound, fmt.Sprintf("%s %s %.0f%%", name, s, 100*r.LoadBusyMax))
			}
			if s == gnetOf(s, servers) || r.PairedRounds == 0 {
				continue
			}
			all = append(all, name)
			if r.RatioVsGnet < low {
				low, lowCell = r.RatioVsGnet, fmt.Sprintf("%s (rounds %.2f-%.2fx)", name, r.RatioMin, r.RatioMax)
			}
			if r.RatioVsGnet < target {
				below = append(below, fmt.Sprintf("%s %.2fx", name, r.RatioVsGnet))
			}
		}
		if len(all) == 0 {
			continue
		}
		list := "none"
		if len(below) > 0 {
			list = strings.Join(below, ", ")
		}
		fmt.Fprintf(w, "summary: %s ÷ "+gnetOf(s, servers)+" req/s, median of %d paired rounds: >= %.2fx in %d of %d cells; lowest %.2fx at %s; below %.2fx: %s\n",
			s, p.rounds, target, len(all)-len(below), len(all), low, lowCell, target, list)
	}
	if len(bound) > 0 {
		fmt.Fprintf(w, "summary: the load generator used %.0f%% or more of its CPUs in a round of: %s (those cells may measure the generator, not the server)\n", 100*loadBound, strings.Join(bound, ", "))
	}
}

// printBuilds prints, for every server listed both plain and with
// suffixB, the two builds' req/s and CPU per request side by side, cell by
// cell: the medians of the per-round ratios (with one round, the ratio of
// the two figures). It prints nothing without such a pair.
func printBuilds(w io.Writer, rep *report, servers []string) {
	find := func(server string, pipeline, conns int) *cellResult {
		for i := range rep.Throughput {
			if r := &rep.Throughput[i]; r.Server == server && r.Pipeline == pipeline && r.Conns == conns {
				return r
			}
		}
		return nil
	}
	for _, sb := range servers {
		s := baseServer(sb)
		if s == sb || !slices.Contains(servers, s) {
			continue
		}
		var rates, costs []string
		rounds := 0
		for _, a := range rep.Throughput {
			if a.Server != s {
				continue
			}
			b := find(sb, a.Pipeline, a.Conns)
			if b == nil {
				continue
			}
			var rr, cr []float64
			if len(a.Rounds) > 0 && len(a.Rounds) == len(b.Rounds) {
				for i := range a.Rounds {
					if x, y := a.Rounds[i].ReqPerSec, b.Rounds[i].ReqPerSec; x > 0 && y > 0 {
						rr = append(rr, x/y)
					}
					if x, y := a.Rounds[i].CPUPerReqUs, b.Rounds[i].CPUPerReqUs; x > 0 && y > 0 {
						cr = append(cr, x/y)
					}
				}
			} else {
				if a.ReqPerSec > 0 && b.ReqPerSec > 0 {
					rr = append(rr, a.ReqPerSec/b.ReqPerSec)
				}
				if a.CPUPerReqUs > 0 && b.CPUPerReqUs > 0 {
					cr = append(cr, a.CPUPerReqUs/b.CPUPerReqUs)
				}
			}
			name := fmt.Sprintf("P%dc%d", a.Pipeline, a.Conns)
			rounds = max(rounds, len(rr))
			if len(rr) > 0 {
				rates = append(rates, fmt.Sprintf("%s %.2fx (%.2f-%.2f)", name, median(rr), slices.Min(rr), slices.Max(rr)))
			}
			if len(cr) > 0 {
				costs = append(costs, fmt.Sprintf("%s %.2fx", name, median(cr)))
			}
		}
		if len(rates) == 0 && len(costs) == 0 {
			continue
		}
		fmt.Fprintf(w, "builds: %s ÷ %s (this build ÷ -exe-b's), median of %d paired rounds (range): req/s %s; CPU µs/req %s\n",
			s, sb, rounds, strings.Join(rates, ", "), strings.Join(costs, ", "))
	}
}

// childGOMAXPROCS says what the servers' children run at: -child-procs
// where given, else a GOMAXPROCS of loadbench's environment (the children
// inherit it, and it overrides their CPU mask), else the number of the
// servers' CPUs (a Go runtime sizes itself to its mask).
func childGOMAXPROCS(serverCPUs, flag int, env string) string {
	if flag > 0 {
		return fmt.Sprintf("GOMAXPROCS %d (-child-procs)", flag)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(env)); err == nil && n > 0 {
		return fmt.Sprintf("GOMAXPROCS %d (inherited from loadbench's environment)", n)
	}
	return fmt.Sprintf("GOMAXPROCS %d", serverCPUs)
}
