package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/bench"
)

// options are the harness's flags.
type options struct {
	match      *regexp.Regexp
	count      int
	duration   string // testing's -benchtime: "1s" or "1000x"
	serverDur  time.Duration
	cpus       int
	pin        bool
	quick      bool
	out        string
	timeout    time.Duration
	list       bool
	profileDir string // make profile: profiles of ours, one child process per scenario
	profileOne string // hidden: the child that profiles one scenario
}

const usageText = `benchtable: every benchmark scenario of asyncsteps beside its Go peer, as one table.

usage: cd bench && go run ./cmd/benchtable [flags]     (make bench runs it with no flag)

Suites and scenarios (-list prints them all): engine/Simple, engine/Sequential,
... (the engine on a manual reactor, two drivers), reactor/RealSimple,
reactor/Wakeup, ... (real reactors pinned one per CPU), syncprim/MutexContended,
... (syncprim on the same reactors), abi/CStep, ... (C steps beside Go steps,
run as 'go test -bench' of ../abi), server/Load (stepsd beside gnet and net,
cmd/loadbench in child processes).

The table: one row per implementation, ours first. time/unit is the median of
-count runs; "ours ÷ peer" divides ours by the peer (on p50 where latency is
the result): below 1, ours is faster. allocs/op and B/op print as integers, or
"<1" when runs allocated less than once per op. The results are also written
to <-o>/bench-<time>.txt (benchstat) and .json; compare two runs with
'benchstat old.txt new.txt' (go install golang.org/x/perf/cmd/benchstat@latest).

Flags:
`

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("benchtable", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarios := fs.String("scenarios", "", "run only scenarios whose suite/Name matches this regexp, e.g. 'engine/', 'Simple$', 'syncprim|abi' (default: all)")
	fs.IntVar(&o.count, "count", 3, "runs of each implementation, interleaved; the table shows the median (-quick: 1)")
	fs.StringVar(&o.duration, "duration", "500ms", "target duration of each run, or a fixed count of ops as in go test's -benchtime ('1000x') (-quick: 100ms)")
	benchtime := fs.String("benchtime", "", "the same as -duration")
	fs.DurationVar(&o.serverDur, "server-duration", 0, "measured time of each server cell (default: cmd/loadbench's, 2s; -quick 300ms)")
	fs.IntVar(&o.cpus, "cpus", runtime.NumCPU(), "real reactors, one per CPU 0..N-1 (pinned unless -pin=false); also the GOMAXPROCS of every run and the reactors of stepsd and gnet")
	fs.BoolVar(&o.pin, "pin", true, "pin real reactor i to CPU i (reactor.Options{Pin: true, CPU: i}), stepsd's too")
	fs.BoolVar(&o.quick, "quick", false, "a CI-sized run: -count 1 -duration 100ms unless given, and the server's quick matrix (about a minute in all)")
	fs.StringVar(&o.out, "o", "", "directory for the benchstat and JSON files (default: the repository's profiles/; '-' writes none)")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "a run that takes longer is taken for a deadlock: print every goroutine's stack and exit 2")
	fs.BoolVar(&o.list, "list", false, "list the scenarios (suite/Name, unit, what one unit is) and exit")
	fs.StringVar(&o.profileDir, "profile", "", "instead of the table, write CPU, heap, allocation, mutex and block profiles of ours in each selected scenario to this directory (make profile)")
	fs.StringVar(&o.profileOne, "profile-one", "", "internal: profile this one scenario in this process")
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.VisitAll(func(f *flag.Flag) {
			if f.Name == "profile-one" || f.Name == "benchtime" {
				return
			}
			fmt.Fprintf(stderr, "  -%s\n    \t%s", f.Name, f.Usage)
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0s" {
				fmt.Fprintf(stderr, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(stderr)
		})
		fmt.Fprint(stderr, `
Examples:
  go run ./cmd/benchtable -scenarios 'engine/' -count 5      # the engine only
  go run ./cmd/benchtable -quick                             # a smoke run
  go run ./cmd/benchtable -cpus 1 -scenarios 'Real|Mutex'    # one pinned reactor
  benchstat ../profiles/bench-<old>.txt ../profiles/bench-<new>.txt
`)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (flags only; -h lists them)", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *benchtime != "" {
		o.duration = *benchtime
		set["duration"] = true
	}
	if o.profileDir != "" && !set["duration"] {
		o.duration = "1s" // more samples; make profile runs ours alone
	}
	if o.quick {
		if !set["count"] {
			o.count = 1
		}
		if !set["duration"] {
			o.duration = "100ms"
		}
	}
	if o.count < 1 {
		return nil, errors.New("-count must be at least 1")
	}
	if o.cpus < 1 || o.cpus > runtime.NumCPU() {
		return nil, fmt.Errorf("-cpus %d: want 1 to %d (the CPUs of this machine)", o.cpus, runtime.NumCPU())
	}
	if err := checkBenchtime(o.duration); err != nil {
		return nil, fmt.Errorf("-duration %q: %v", o.duration, err)
	}
	if *scenarios != "" {
		var err error
		if o.match, err = regexp.Compile(*scenarios); err != nil {
			return nil, fmt.Errorf("-scenarios: %v", err)
		}
	}
	return o, nil
}

// checkBenchtime accepts what testing's -benchtime accepts: a duration or
// a count like "100x".
func checkBenchtime(s string) error {
	if n, ok := strings.CutSuffix(s, "x"); ok {
		var k int
		if _, err := fmt.Sscanf(n, "%d", &k); err != nil || k < 1 {
			return errors.New("want a duration (1s) or a count of ops (100x)")
		}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return errors.New("want a duration (1s) or a count of ops (100x)")
	}
	return nil
}

// selected filters cases by -scenarios.
func (o *options) selected(cs []caseSpec) []caseSpec {
	var out []caseSpec
	for _, c := range cs {
		if o.match == nil || o.match.MatchString(c.id()) {
			out = append(out, c)
		}
	}
	return out
}

// run is the whole program; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "benchtable:", err)
		return 2
	}
	if o.list {
		for _, c := range allCases() {
			fmt.Fprintf(stdout, "%-26s per %-5s %s\n", c.id(), c.unit, c.what)
		}
		return 0
	}
	bench.CPUs, bench.Pin = o.cpus, o.pin
	runtime.GOMAXPROCS(o.cpus)
	testing.Init()
	if err := flagSet("test.benchtime", o.duration); err != nil {
		fmt.Fprintln(stderr, "benchtable: -duration:", err)
		return 2
	}
	if o.profileOne != "" {
		return profileOne(o, stderr)
	}
	cases := o.selected(allCases())
	if len(cases) == 0 {
		fmt.Fprintf(stderr, "benchtable: no scenario matches -scenarios %q (-list shows them)\n", o.match)
		return 2
	}
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(stderr, "benchtable:", err)
		return 2
	}
	if o.profileDir != "" {
		return profileAll(o, root, cases, stdout, stderr)
	}

	rep := &report{
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPU: cpuModel(),
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Reactors: bench.Placement(),
		Args: args, Count: o.count, Duration: o.duration, Started: time.Now().UTC().Format(time.RFC3339),
	}
	var inproc, abi []caseSpec
	server := false
	for _, c := range cases {
		switch c.suite {
		case suiteABI:
			abi = append(abi, c)
		case suiteServer:
			server = true
		default:
			inproc = append(inproc, c)
		}
	}
	total := 0
	for _, c := range append(inproc, abi...) {
		total += len(c.impls) * o.count
	}
	if server {
		total += serverSteps(o)
	}
	p := newProgress(stderr, total)
	started := time.Now()

	dir := o.out
	if dir == "" {
		dir = filepath.Join(root, "profiles")
	}
	base := "bench-" + time.Now().UTC().Format("20060102-150405")
	var results []*caseResult
	partial := func(w io.Writer) { // what a watchdog prints and saves before it exits
		fmt.Fprintln(w, header(rep, o))
		printTable(w, results)
		if o.out == "-" {
			return
		}
		rep.Cases = results
		rep.Notes = append(rep.Notes, "INCOMPLETE: a run did not finish within -timeout "+o.timeout.String())
		if txt, js, err := writeFiles(dir, base, rep); err == nil {
			fmt.Fprintf(w, "\nthe runs so far are saved: %s and %s\n", relTo(root, txt), relTo(root, js))
		}
	}
	for _, c := range inproc {
		cr := newCaseResult(c)
		results = append(results, cr)
		for n := range o.count {
			for k, im := range c.impls {
				p.step(fmt.Sprintf("%s %s (run %d/%d)", c.id(), im.name, n+1, o.count))
				r := runInProcess(c.id()+"/"+im.name, im.fn, o.timeout, p, func(w io.Writer) { partial(w) })
				cr.Impls[k].Runs = append(cr.Impls[k].Runs, r)
			}
		}
	}
	if len(abi) > 0 {
		results = append(results, runABI(o, root, abi, p, rep)...)
	}
	if server {
		results = append(results, runServer(o, root, p, rep)...)
	}
	p.clear()
	rep.Cases = results
	rep.Seconds = time.Since(started).Seconds()

	fmt.Fprintln(stdout, header(rep, o))
	fmt.Fprintln(stdout)
	notes := printTable(stdout, results)
	if rep.ServerMemory != "" {
		fmt.Fprintln(stdout)
		fmt.Fprint(stdout, rep.ServerMemory)
	}
	rep.Notes = append(rep.Notes, notes...)
	if len(rep.Notes) > 0 {
		fmt.Fprintln(stdout)
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(stdout, n)
	}
	status := 0
	if rep.failed() {
		status = 1
	}
	if o.out == "-" {
		return status
	}
	prev := latestRun(dir)
	txt, js, err := writeFiles(dir, base, rep)
	if err != nil {
		fmt.Fprintln(stderr, "benchtable: saving the results:", err)
		return 1
	}
	fmt.Fprintf(stdout, "\nsaved: %s (benchstat) and %s\n", relTo(root, txt), relTo(root, js))
	if prev != "" {
		fmt.Fprintf(stdout, "compare with the previous run (from %s): benchstat %s %s\n", rootName(root), relTo(root, prev), relTo(root, txt))
	} else {
		fmt.Fprintf(stdout, "compare two runs: benchstat old.txt new.txt (go install golang.org/x/perf/cmd/benchstat@latest)\n")
	}
	return status
}

// header is the lines above the table.
func header(rep *report, o *options) string {
	cpu := ""
	if rep.CPU != "" {
		cpu = " (" + rep.CPU + ")"
	}
	took := ""
	if rep.Seconds > 0 {
		took = fmt.Sprintf("; took %s", (time.Duration(rep.Seconds) * time.Second).Round(time.Second))
	}
	return fmt.Sprintf(`asyncsteps benchmarks: %s %s/%s, %d CPUs%s, GOMAXPROCS=%d; real reactors: %s
-count %d -duration %s%s. Each cell is the median of -count runs. "ours ÷ peer": ours divided by
the peer, on time/unit (on p50 for latency scenarios): lower is better, below 1 ours is faster.
Targets: profiles/README.md.`,
		rep.Go, rep.OS, rep.Arch, rep.NumCPU, cpu, rep.GOMAXPROCS, rep.Reactors, o.count, o.duration, took)
}

// flagSet sets one of testing's flags (testing.Benchmark reads
// -test.benchtime).
func flagSet(name, value string) error { return flag.CommandLine.Set(name, value) }

// runInProcess runs f once with testing.Benchmark. If it does not return
// within timeout, every goroutine's stack and the table so far are printed
// and the program exits 2: a deadlock does not hang make bench.
func runInProcess(name string, f func(*testing.B), timeout time.Duration, p *progress, partial func(io.Writer)) runResult {
	watchdog := time.AfterFunc(timeout, func() {
		p.printf("\nbenchtable: %s did not finish within %v: a deadlock, or a run far slower than the short run testing.Benchmark sized it by (raise -timeout to tell). goroutines:\n\n", name, timeout)
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
		p.printf("benchtable: %s: %s\n", name, msg)
		return runResult{Err: msg}
	}
	return runResult{
		N: br.N, NsPerUnit: float64(br.T.Nanoseconds()) / float64(br.N), Mem: true,
		BytesPerOp: float64(br.MemBytes) / float64(br.N), AllocsPerOp: float64(br.MemAllocs) / float64(br.N),
		Metrics: br.Extra,
	}
}

// repoRoot finds the main module's directory: the nearest directory, from
// here up, whose go.mod declares github.com/asyncsteps/asyncsteps.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			line, _, _ := bytes.Cut(data, []byte("\n"))
			if strings.TrimSpace(string(line)) == "module github.com/asyncsteps/asyncsteps" {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("run me inside the asyncsteps repository (no go.mod of github.com/asyncsteps/asyncsteps above %s)", dir)
		}
	}
}

// cpuModel is the CPU's model name, as go test prints it.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// latestRun is the newest bench-*.txt in dir, or "".
func latestRun(dir string) string {
	m, _ := filepath.Glob(filepath.Join(dir, "bench-*.txt"))
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1] // the names sort by time
}

// relTo shows path relative to the repository's root when it is inside.
func relTo(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// rootName names the repository's root for a reader: "the repository
// root" when that is where the command runs from or just above.
func rootName(root string) string {
	return "the repository root, " + root
}
