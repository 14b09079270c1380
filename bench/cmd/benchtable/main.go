// Command benchtable runs the bench package's scenarios, ours under both
// drivers and the goroutine peer of each, and prints one table with two rows
// per scenario (ours with driver=loop, then with driver=goroutine, each beside
// the same peer run): time and allocations per unit of work, the peer/ours
// ratio, and whether ours meets its target.
//
// A second table has the sync primitives' scenarios (bench.SyncScenarios):
// ours (syncprim on two real reactors) and each library peer doing the same
// job, one row per implementation, with the fairness and rate metrics the
// benchmarks report beside time and allocations.
//
// It calls testing.Benchmark on the same functions `go test -bench` runs,
// so each run auto-scales b.N to -benchtime. With -count N each
// implementation runs N times, interleaved (loop, goroutine, peer, loop,
// ...), and the run with the median time is shown.
//
//	cd bench && go run ./cmd/benchtable [-scenarios RE] [-count N] [-benchtime D]
//
// It exits 1 if a benchmark failed (a wrong result), 2 if one did not finish
// within -timeout (goroutine stacks are printed: a deadlock), and, with
// -strict, 3 if a target was not met.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/bench"
	"github.com/asyncsteps/asyncsteps/bench/internal/mdtable"
)

func main() {
	fs := flag.NewFlagSet("benchtable", flag.ExitOnError)
	scenarios := fs.String("scenarios", "", "run only scenarios whose name matches this regexp (default all)")
	count := fs.Int("count", 3, "runs of each of ours (per driver) and the peer; the median is shown")
	benchtime := fs.Duration("benchtime", time.Second, "target duration of each run (testing's -benchtime)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up on a run that takes longer (a deadlock) and exit 2")
	strict := fs.Bool("strict", false, "exit 3 if a target is not met")
	fs.Parse(os.Args[1:])

	if *count < 1 {
		fmt.Fprintln(os.Stderr, "benchtable: -count must be at least 1")
		os.Exit(2)
	}
	var match *regexp.Regexp
	if *scenarios != "" {
		var err error
		if match, err = regexp.Compile(*scenarios); err != nil {
			fmt.Fprintf(os.Stderr, "benchtable: -scenarios: %v\n", err)
			os.Exit(2)
		}
	}
	testing.Init()
	if err := flag.CommandLine.Set("test.benchtime", benchtime.String()); err != nil {
		fmt.Fprintf(os.Stderr, "benchtable: -benchtime: %v\n", err)
		os.Exit(2)
	}

	var rows []row
	for _, s := range bench.Scenarios {
		if match == nil || match.MatchString(s.Name) {
			rows = append(rows, row{s: s})
		}
	}
	var srows []syncRow
	for _, s := range bench.SyncScenarios {
		if match == nil || match.MatchString(s.Name) {
			srows = append(srows, syncRow{s: s, peers: make([][]result, len(s.Peers))})
		}
	}
	if len(rows) == 0 && len(srows) == 0 {
		fmt.Fprintf(os.Stderr, "benchtable: no scenario matches %q\n", *scenarios)
		os.Exit(2)
	}
	printAll := func(w io.Writer, rows []row, srows []syncRow) (failed, missed bool) {
		if len(rows) > 0 {
			failed, missed = printTable(w, rows)
		}
		if len(srows) > 0 {
			if len(rows) > 0 {
				fmt.Fprintln(w)
			}
			f, m := printSyncTable(w, srows)
			failed, missed = failed || f, missed || m
		}
		return failed, missed
	}

	header := fmt.Sprintf("%s %s/%s, GOMAXPROCS=%d, %d CPUs; -benchtime %v -count %d",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), *benchtime, *count)
	for i := range rows {
		r := &rows[i]
		for n := range *count {
			type impl struct {
				name string
				f    func(*testing.B)
				res  *[]result
			}
			var impls []impl
			for di, d := range drivers {
				impls = append(impls, impl{implName(d), r.s.OursBy(d), &r.ours[di]})
			}
			impls = append(impls, impl{"impl=" + bench.ImplGoroutines, r.s.Peer, &r.peer})
			for _, impl := range impls {
				name := fmt.Sprintf("%s/%s", r.s.Name, impl.name)
				fmt.Fprintf(os.Stderr, "running %s (%d/%d)\n", name, n+1, *count)
				*impl.res = append(*impl.res, run(name, impl.f, *timeout, func(w io.Writer) {
					fmt.Fprintln(w, header)
					printAll(w, rows[:i+1], nil)
				}))
			}
		}
	}
	for i := range srows {
		r := &srows[i]
		for n := range *count {
			type impl struct {
				name string
				f    func(*testing.B)
				res  *[]result
			}
			impls := []impl{{"impl=" + bench.ImplAsyncSteps, r.s.Ours, &r.ours}}
			for pi, p := range r.s.Peers {
				impls = append(impls, impl{"impl=" + p.Name, p.Bench, &r.peers[pi]})
			}
			for _, impl := range impls {
				name := fmt.Sprintf("%s/%s", r.s.Name, impl.name)
				fmt.Fprintf(os.Stderr, "running %s (%d/%d)\n", name, n+1, *count)
				*impl.res = append(*impl.res, run(name, impl.f, *timeout, func(w io.Writer) {
					fmt.Fprintln(w, header)
					printAll(w, rows, srows[:i+1])
				}))
			}
		}
	}

	fmt.Println(header)
	fmt.Println()
	failed, missed := printAll(os.Stdout, rows, srows)
	switch {
	case failed:
		os.Exit(1)
	case missed && *strict:
		os.Exit(3)
	}
}

// drivers are ours, in the order of a row's ours and of the table's rows.
var drivers = [2]bench.Driver{bench.DriverLoop, bench.DriverGoroutine}

// implName is ours under driver d as in sub-benchmark names:
// impl=asyncsteps/driver=loop.
func implName(d bench.Driver) string {
	return fmt.Sprintf("impl=%s/driver=%v", bench.ImplAsyncSteps, d)
}

type row struct {
	s    bench.Scenario
	ours [2][]result // by drivers' index
	peer []result
}

// syncRow is one sync scenario: ours and each peer's runs, by Peers' index.
type syncRow struct {
	s     bench.SyncScenario
	ours  []result
	peers [][]result
}

// result is one run of one implementation.
type result struct {
	ns     float64 // per unit: b.N counts units
	allocs uint64  // in the measured part, in all
	n      int
	extra  map[string]float64 // the benchmark's own metrics (b.ReportMetric)
	err    string             // the run failed
}

func (r result) allocsPerUnit() float64 { return float64(r.allocs) / float64(r.n) }

// run runs f once with testing.Benchmark. If it does not return within
// timeout, the table so far and every goroutine's stack are printed, and the
// program exits 2.
func run(name string, f func(*testing.B), timeout time.Duration, partial func(io.Writer)) result {
	watchdog := time.AfterFunc(timeout, func() {
		fmt.Fprintf(os.Stderr, "\nbenchtable: %s did not finish within %v: deadlock? goroutines:\n\n", name, timeout)
		buf := make([]byte, 1<<20)
		os.Stderr.Write(buf[:runtime.Stack(buf, true)])
		fmt.Fprintln(os.Stderr)
		partial(os.Stderr)
		os.Exit(2)
	})
	defer watchdog.Stop()
	bench.TakeFailure()
	br := testing.Benchmark(f)
	if br.N == 0 {
		msg := bench.TakeFailure()
		if msg == "" {
			msg = "failed"
		}
		fmt.Fprintf(os.Stderr, "benchtable: %s: %s\n", name, msg)
		return result{err: msg}
	}
	return result{ns: float64(br.T.Nanoseconds()) / float64(br.N), allocs: br.MemAllocs, n: br.N, extra: br.Extra}
}

// median returns the run with the median time, or a failed run if any
// failed; ok is false when there is none.
func median(rs []result) (result, bool) {
	if len(rs) == 0 {
		return result{}, false
	}
	for _, r := range rs {
		if r.err != "" {
			return r, true
		}
	}
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b result) int {
		switch {
		case a.ns < b.ns:
			return -1
		case a.ns > b.ns:
			return 1
		}
		return 0
	})
	return s[len(s)/2], true
}

// printTable prints rows as an aligned Markdown table, two lines per
// scenario (ours under each driver, beside the same peer run), and reports
// whether a run failed and whether a target was missed.
func printTable(w io.Writer, rows []row) (failed, missed bool) {
	cells := [][]string{{"scenario", "per", "driver", "asyncsteps ns/op", "allocs/op", "goroutines ns/op", "allocs/op", "ratio (peer/ours)", "target", "met?"}}
	var notes []string
	for _, r := range rows {
		peer, okP := median(r.peer)
		for di, d := range drivers {
			ours, okO := median(r.ours[di])
			c := []string{r.s.Name, r.s.Unit, d.String(), "", "", "", "", "", r.s.Target(), ""}
			if okO {
				c[3], c[4] = fmtNs(ours), fmtAllocs(ours)
			}
			if okP {
				c[5], c[6] = fmtNs(peer), fmtAllocs(peer)
			}
			if okO && okP && ours.err == "" && peer.err == "" {
				c[7] = fmt.Sprintf("%.1fx", peer.ns/ours.ns)
			}
			switch {
			case !okO:
			case ours.err != "":
				c[9] = "FAIL"
			case r.s.Met(ours.ns, ours.allocs):
				c[9] = "yes"
			default:
				c[9] = "no"
				missed = true
			}
			if ours.err != "" {
				failed = true
				notes = append(notes, fmt.Sprintf("%s/%s: %s", r.s.Name, implName(d), ours.err))
			}
			cells = append(cells, c)
		}
		if peer.err != "" {
			failed = true
			notes = append(notes, fmt.Sprintf("%s/impl=%s: %s", r.s.Name, bench.ImplGoroutines, peer.err))
		}
	}
	mdtable.Write(w, cells, 3, 7)
	for _, n := range notes {
		fmt.Fprintln(w, "FAIL:", n)
	}
	return failed, missed
}

// printSyncTable prints the sync scenarios as an aligned Markdown table,
// one line per implementation (ours first, then the peers, each with its
// time over ours), and reports whether a run failed and whether a target
// of ours was missed.
func printSyncTable(w io.Writer, rows []syncRow) (failed, missed bool) {
	cells := [][]string{{"sync scenario", "per", "impl", "ns/op", "allocs/op", "fairness (max/min)", "rate/limit", "ratio (impl/ours)", "target", "met?"}}
	var notes []string
	for _, r := range rows {
		ours, okO := median(r.ours)
		line := func(impl string, res result, ok bool) []string {
			c := []string{r.s.Name, r.s.Unit, impl, "", "", "", "", "", "", ""}
			if !ok {
				return c
			}
			c[3], c[4] = fmtNs(res), fmtAllocs(res)
			if res.err == "" {
				c[5] = fmtMetric(res, bench.MetricFairness)
				c[6] = fmtMetric(res, bench.MetricOfLimit)
			} else {
				failed = true
				notes = append(notes, fmt.Sprintf("%s/impl=%s: %s", r.s.Name, impl, res.err))
			}
			return c
		}
		c := line(bench.ImplAsyncSteps, ours, okO)
		c[8] = r.s.Target()
		switch {
		case !okO:
		case ours.err != "":
			c[9] = "FAIL"
		case r.s.Met(ours.ns, ours.allocs):
			c[9] = "yes"
		default:
			c[9] = "no"
			missed = true
		}
		cells = append(cells, c)
		for pi, p := range r.s.Peers {
			peer, okP := median(r.peers[pi])
			c := line(p.Name, peer, okP)
			if okO && okP && ours.err == "" && peer.err == "" {
				c[7] = fmt.Sprintf("%.2fx", peer.ns/ours.ns)
			}
			cells = append(cells, c)
		}
	}
	mdtable.Write(w, cells, 3, 7)
	for _, n := range notes {
		fmt.Fprintln(w, "FAIL:", n)
	}
	return failed, missed
}

// fmtMetric shows a benchmark's own metric, or nothing if it has none.
func fmtMetric(r result, name string) string {
	v, ok := r.extra[name]
	if !ok {
		return ""
	}
	return fmt.Sprintf("%.3g", v)
}

func fmtNs(r result) string {
	if r.err != "" {
		return "FAIL"
	}
	switch {
	case r.ns < 10:
		return fmt.Sprintf("%.2f", r.ns)
	case r.ns < 100:
		return fmt.Sprintf("%.1f", r.ns)
	}
	return fmt.Sprintf("%.0f", r.ns)
}

// fmtAllocs shows exactly 0 only when the run allocated nothing at all.
func fmtAllocs(r result) string {
	switch {
	case r.err != "":
		return "FAIL"
	case r.allocs == 0:
		return "0"
	}
	return fmt.Sprintf("%.3g", r.allocsPerUnit())
}
