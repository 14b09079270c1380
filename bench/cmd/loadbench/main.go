// Command loadbench measures RESP servers under load over
// loopback: stepsd (ours, the asyncsteps engine on its reactors) and two
// peers from package bench, a plain gnet server (gnetpeer.go) and a
// goroutine-per-connection net server (netpeer.go). Every server runs in a
// child process of its own (this program, re-run with the hidden -serve
// flag), so that its resident memory can be read from /proc while this
// process generates the load (netbench.RunLoad).
//
// It runs, for each server:
//
//   - the throughput matrix: pipeline 1 and 16 × 1, 16 and 256
//     connections, each cell bounded by -duration (after -warmup) and
//     -requests, with the KV mix (SET, GET, ECHO); one child serves all
//     the cells;
//   - slow readers: 16 connections write pipelined ECHOs of 1 KiB for 3s
//     and never read a reply, then close; what the server buffers for them
//     shows in its memory;
//   - overload: 256 connections × pipeline 64 of SLEEP 50 for 2s; stepsd
//     runs with small Limiter bounds (Concurrent 1000, Queue 1000), so
//     that it answers part of them with ERR DefenseRejected.
//
// The memory scenarios each get a fresh child. It prints two Markdown
// tables: throughput (req/s, latency quantiles, errors, the ratio to gnet's
// req/s in the same cell, the server's peak RSS in the cell) and memory
// (RSS before, at the peak, at the end of the load, and after it).
//
//   - redis-benchmark (-redis-benchmark, on by default): -t set,get,ping
//     with -P 1 and 16 × -c 1, 16 and 256 (and -P 16 -c 50) against
//     stepsd, gnet and a real redis-server, each in a process of its own,
//     with the server's CPU per request; skipped with a note where the
//     programs are not installed.
//
// Every throughput row carries the server's own CPU per request: its
// process's utime+stime (/proc/<pid>/stat) over the measured time, divided
// by the requests counted, so that the cost of a request is readable even
// when the load generator shares the CPUs.
//
// On a machine of many cores, one run of a cell is not a verdict: the
// server and the load generator share the CPUs, and the same cell of the
// same server can read 1.7x apart from one run to the next. Two flags make
// the comparison fair, the same for every server:
//
//   - -rounds R runs each cell R times per server, the servers in turn
//     within a round (the first rotating), every server's child up for the
//     whole matrix; the table shows the medians of the rounds and their
//     range, and each server's ratio to gnet is the median of its per-round
//     ratios to gnet's run in the same round; a summary under the table
//     names the cells below -target;
//   - -server-cpus half (or auto, or a CPU list) starts every server's
//     process on those CPUs, and puts the load generator (this process,
//     and redis-benchmark) on the others (-load-cpus), so that neither
//     takes the other's CPUs; the table then shows how busy the generator
//     was, and a cell whose generator was saturated is named.
//
// scripts/devkit-run.sh runs the many-core tables that way.
//
// Two builds side by side (make devkit's PGO and non-PGO loadbench):
// -exe-b names the other build, and a server listed with the suffix @b
// (stepsd@b, gnet@b) runs its child from it, in the same rounds and under
// this process's load generator; -cpuprofiles DIR writes a CPU profile of
// every server's child and of the load generator, the input of make pgo
// (scripts/pgo.sh).
//
//	cd bench && go run ./cmd/loadbench [-quick] [-servers stepsd,gnet,net] [-json out.json]
//	cd bench && go run ./cmd/loadbench -loops 8 -rounds 5 -server-cpus half -duration 500ms -warmup 200ms -memory=false
//
// The default run takes about 70s, -quick about 15s. It exits 1 if a run
// failed (a server that did not start, a connection error) and 3 if a
// server gave wrong replies where none were expected.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/asyncsteps/asyncsteps/bench/internal/mdtable"
	"github.com/asyncsteps/asyncsteps/bench/netbench"
)

// The servers, in the tables' order.
const (
	serverStepsd = "stepsd"
	// serverStepsdFree is stepsd as `make run` starts it, whatever -pin
	// says: reactors neither pinned nor locked (stepsd's default).
	serverStepsdFree = "stepsd-unpinned"
	// serverStepsdShared is stepsd with Config.SharedLimiter: one Limiter
	// for every reactor, as before each reactor had its share, to set the
	// two side by side in one run.
	serverStepsdShared = "stepsd-shared"
	serverGnet         = "gnet"
	serverNet          = "net"
)

// pinStepsd is -pin: stepsd's children pin their reactors.
var pinStepsd bool

// spinStepsd is -spin: stepsd's Config.Spin in its children.
var spinStepsd time.Duration

// profilePrefix is -profile: where the stepsd child of the throughput
// matrix writes its profiles.
var profilePrefix string

// childProcs is -child-procs: the children's GOMAXPROCS (0: default).
var childProcs int

// cpus is -server-cpus and -load-cpus: where the servers' processes and
// the load generator run (zero: anywhere, sharing every CPU).
var cpus cpuPlan

// cpuProfileDir is -cpuprofiles: where every server's child of the
// throughput matrix, and this process, write a CPU profile (make pgo).
var cpuProfileDir string

// exeB is -exe-b: the program that runs the children of the servers
// listed with suffixB.
var exeB string

// suffixB marks a server of -servers whose child runs from -exe-b: a
// second build (for example the same tree without PGO) beside this one,
// in the same rounds and under the same load generator.
const suffixB = "@b"

// baseServer is server without suffixB: the name its child serves.
func baseServer(server string) string { return strings.TrimSuffix(server, suffixB) }

// gnetOf is the server that server's ratios are to: gnet of the same
// build (gnet@b for an @b server, when listed).
func gnetOf(server string, servers []string) string {
	if strings.HasSuffix(server, suffixB) && slices.Contains(servers, serverGnet+suffixB) {
		return serverGnet + suffixB
	}
	return serverGnet
}

// childFlags are the flags of -serve mode, left out of -help.
var childFlags = map[string]bool{"serve": true, "addr": true, "concurrent": true, "queue": true, "cpuprofile": true}

func main() {
	fs := flag.NewFlagSet("loadbench", flag.ExitOnError)
	serve := fs.String("serve", "", "child mode: run this server (stepsd, gnet or net), print READY <addr>, stop on SIGTERM or the end of stdin")
	addr := fs.String("addr", "127.0.0.1:0", "child mode: listen address")
	concurrent := fs.Int("concurrent", 0, "child mode, stepsd: Config.Concurrent (0: its default)")
	queue := fs.Int("queue", 0, "child mode, stepsd: Config.Queue (0: its default)")
	cpuProfile := fs.String("cpuprofile", "", "child mode: write a CPU profile (and no other) to this file until the server stops")

	loops := fs.Int("loops", runtime.NumCPU(), "event loops of gnet, reactors of stepsd")
	fs.StringVar(&cpuProfileDir, "cpuprofiles", "", "write a CPU profile of every server's child during the throughput matrix to <this dir>/<server>.cpu.prof, and of this process (the load generator) to <this dir>/load.cpu.prof; no other profile is sampled, and the memory scenarios and redis-benchmark rows are skipped (make pgo)")
	fs.StringVar(&exeB, "exe-b", "", "a second build of loadbench: every server listed with the suffix "+suffixB+" (stepsd"+suffixB+", gnet"+suffixB+", ...) runs its child from it, in the same rounds as the others and under this process's load generator, so that two builds (PGO and not) are compared interleaved; an "+suffixB+" server's ratios are to gnet"+suffixB+" where that is listed")
	fs.StringVar(&profilePrefix, "profile", "", "write CPU, heap, allocation, mutex and block profiles of stepsd's child during the throughput matrix to <this>.cpu.prof etc., and skip the memory scenarios (make profile)")
	fs.DurationVar(&spinStepsd, "spin", 0, "stepsd's Config.Spin (reactor.Options.Spin): how long an idle reactor looks for posted work before it sleeps")
	fs.BoolVar(&pinStepsd, "pin", false, "pin stepsd's reactor i to CPU i (stepsd -pin); gnet and net are never pinned")
	duration := fs.Duration("duration", 2*time.Second, "measured time of each throughput cell")
	warmup := fs.Duration("warmup", 300*time.Millisecond, "time at the start of each cell that is not measured")
	requests := fs.Int("requests", 2_000_000, "requests bound of each throughput cell")
	quick := fs.Bool("quick", false, "a smoke run of about 15s: three cells of 300ms per server, short memory scenarios")
	servers := fs.String("servers", strings.Join([]string{serverStepsd, serverGnet, serverNet}, ","), "servers to run, comma-separated, in the tables' order (also "+serverStepsdFree+": stepsd unpinned whatever -pin says; "+serverStepsdShared+": stepsd with one Limiter shared by its reactors)")
	jsonPath := fs.String("json", "", "also write the results to this file, as JSON")
	redisBench := fs.Bool("redis-benchmark", true, "also run redis-benchmark -t "+rbTests+" (-P 1/16 × -c 1/16/256, and -P 16 -c 50) against stepsd, gnet and a real redis-server, with the server's CPU per request; skipped with a note where redis-benchmark or redis-server is not installed")
	cellsFlag := fs.String("cells", "", "throughput cells to run, comma-separated PIPELINExCONNS such as 16x256 (default: the full matrix, or -quick's)")
	fs.IntVar(&childProcs, "child-procs", 0, "GOMAXPROCS of the servers' child processes (0: the Go runtime's default, every CPU)")
	rounds := fs.Int("rounds", 1, "runs of each throughput cell per server, the servers in turn within a round (the first rotating), every server's child up for the whole matrix; with more than 1, req/s and CPU µs/req are the medians of the rounds, the ratios to gnet the medians of the per-round ratios, and the table adds their ranges")
	serverCPUs := fs.String("server-cpus", "", "CPUs of every server's process, the same for each: a CPU list such as 0-7, "+cpuHalf+" (the first half of the CPUs this process may run on, whole cores first, at least -loops of them) or "+cpuAuto+" (the first -loops of them); the load generator then gets -load-cpus; a machine with too few CPUs for both is an error (default: servers and load share every CPU)")
	loadCPUsFlag := fs.String("load-cpus", "", "CPUs of the load generator (this process, and redis-benchmark): a CPU list, or "+cpuRest+" (every CPU the servers do not get; the default with -server-cpus)")
	childWarmup := fs.Duration("child-warmup", 0, "before the throughput matrix, each server's child serves the matrix's largest cell (most connections, deepest pipeline) this long, unmeasured: what a fresh process pays once (heap, stacks, threads) stays out of the first round; so does each server of the redis-benchmark rows (redis-server too) before its first test, with their largest cell")
	target := fs.Float64("target", 0.9, "the summary under the throughput table (with -rounds above 1, -server-cpus, or this flag given) lists each server's cells whose median ratio to gnet's req/s is below this")
	memory := fs.Bool("memory", true, "run the memory scenarios (slow readers, overload) after the throughput matrix")
	rbCellsFlag := fs.String("rb-cells", "", "redis-benchmark cells, comma-separated PIPELINExCLIENTS such as 16x50 (default: -P 1/16 × -c 1/16/256 and 16x50)")
	rbTestsFlag := fs.String("rb-tests", rbTests, "redis-benchmark's -t")
	rbThreads := fs.Int("rb-threads", 0, "redis-benchmark's --threads (Redis 6 and later): load threads, so that on many cores the servers, not one load thread, set the figures (0: its single thread)")
	rbN := fs.Int("rb-n", 0, "redis-benchmark's -n per test (0: 20,000 at -P 1, 200,000 at -P 16, a tenth with -quick)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loadbench [flags]\n")
		fs.VisitAll(func(f *flag.Flag) {
			if childFlags[f.Name] {
				return
			}
			fmt.Fprintf(fs.Output(), "  -%s\n    \t%s (default %q)\n", f.Name, f.Usage, f.DefValue)
		})
	}
	fs.Parse(os.Args[1:])

	if *serve != "" {
		os.Exit(runChild(*serve, *addr, *loops, limits{*concurrent, *queue}, *cpuProfile))
	}

	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	p := defaultPlan
	if *quick {
		p = quickPlan
	}
	if set["duration"] || !*quick {
		p.duration = *duration
	}
	if set["warmup"] || !*quick {
		p.warmup = *warmup
	}
	p.requests = *requests
	if *cellsFlag != "" {
		rc, err := parseRBCells(*cellsFlag)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadbench: -cells:", strings.TrimPrefix(err.Error(), "-rb-cells: "))
			os.Exit(2)
		}
		p.cells = nil
		for _, c := range rc {
			p.cells = append(p.cells, cell{pipeline: c.pipeline, conns: c.clients})
		}
	}
	if childProcs < 0 {
		fmt.Fprintln(os.Stderr, "loadbench: -child-procs must not be negative")
		os.Exit(2)
	}
	rp := rbPlan{tests: *rbTestsFlag, threads: *rbThreads, n: *rbN, quick: *quick}
	var err error
	if rp.cells, err = parseRBCells(*rbCellsFlag); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(2)
	}
	if *rbThreads < 0 || *rbN < 0 || strings.TrimSpace(rp.tests) == "" {
		fmt.Fprintln(os.Stderr, "loadbench: -rb-threads and -rb-n must not be negative, -rb-tests not empty")
		os.Exit(2)
	}
	if *rounds < 1 || *rounds > 1000 {
		fmt.Fprintln(os.Stderr, "loadbench: -rounds must be 1 to 1000")
		os.Exit(2)
	}
	p.rounds = *rounds
	if *childWarmup < 0 {
		fmt.Fprintln(os.Stderr, "loadbench: -child-warmup must not be negative")
		os.Exit(2)
	}
	p.childWarmup = *childWarmup
	rp.warmup = *childWarmup
	if !(*target > 0) || math.IsInf(*target, 0) {
		fmt.Fprintln(os.Stderr, "loadbench: -target must be a ratio above 0, such as 0.9")
		os.Exit(2)
	}
	fs.Visit(func(f *flag.Flag) { p.targetSet = p.targetSet || f.Name == "target" })
	if *loops < 1 || p.duration <= 0 || p.requests < 1 {
		fmt.Fprintln(os.Stderr, "loadbench: -loops, -duration and -requests must be positive")
		os.Exit(2)
	}
	if profilePrefix != "" && cpuProfileDir != "" {
		fmt.Fprintln(os.Stderr, "loadbench: -profile and -cpuprofiles exclude each other")
		os.Exit(2)
	}
	if cpuProfileDir != "" {
		if st, err := os.Stat(cpuProfileDir); err != nil || !st.IsDir() {
			fmt.Fprintf(os.Stderr, "loadbench: -cpuprofiles %s: not a directory\n", cpuProfileDir)
			os.Exit(2)
		}
	}
	if exeB != "" {
		if _, err := exec.LookPath(exeB); err != nil {
			fmt.Fprintf(os.Stderr, "loadbench: -exe-b: %v\n", err)
			os.Exit(2)
		}
	}
	var list []string
	for _, s := range strings.Split(*servers, ",") {
		s = strings.TrimSpace(s)
		if strings.HasSuffix(s, suffixB) && exeB == "" {
			fmt.Fprintf(os.Stderr, "loadbench: -servers: %q needs -exe-b\n", s)
			os.Exit(2)
		}
		switch baseServer(s) {
		case serverStepsd, serverStepsdFree, serverStepsdShared, serverGnet, serverNet:
			if slices.Contains(list, s) {
				// Rows and rounds are kept by server name.
				fmt.Fprintf(os.Stderr, "loadbench: -servers: %q listed twice\n", s)
				os.Exit(2)
			}
			list = append(list, s)
		default:
			fmt.Fprintf(os.Stderr, "loadbench: -servers: unknown server %q\n", s)
			os.Exit(2)
		}
	}

	allowed, err := allowedCPUs()
	if err == nil {
		cpus, err = planCPUs(allowed, *loops, *serverCPUs, *loadCPUsFlag)
	}
	if err == nil && pinStepsd {
		err = checkPin(cpus.server, *loops)
	}
	if err == nil && cpus.on() {
		err = pinSelf(cpus.load)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(2)
	}

	rep := &report{
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(),
		Loops: *loops, Pin: pinStepsd, ChildProcs: childProcs, Duration: p.duration.String(), Warmup: p.warmup.String(), Requests: p.requests, Quick: *quick,
		Rounds: p.rounds, ServerCPUs: fmtCPUList(cpus.server), LoadCPUs: fmtCPUList(cpus.load),
	}
	started := time.Now()
	if cpuProfileDir != "" {
		if err := profileLoad(func() { runMatrices(rep, list, *loops, p) }); err != nil {
			fmt.Fprintln(os.Stderr, "loadbench: -cpuprofiles:", err)
			os.Exit(1)
		}
	} else {
		runMatrices(rep, list, *loops, p)
	}
	profiling := profilePrefix != "" || cpuProfileDir != ""
	if *memory && !profiling {
		for _, s := range list {
			runSlow(rep, s, *loops, p)
		}
		for _, s := range list {
			runOverload(rep, s, *loops, p)
		}
	}
	if *redisBench && !profiling {
		runRedisBenchmark(rep, append(slices.Clone(list), serverRedis), *loops, rp)
	}
	rep.Seconds = time.Since(started).Seconds()

	pinned := ""
	if pinStepsd {
		pinned = " (stepsd's pinned one per CPU)"
	}
	if childProcs > 0 {
		pinned += fmt.Sprintf(", children at GOMAXPROCS=%d", childProcs)
	}
	fmt.Printf("%s %s/%s, %d CPUs; servers in child processes, %d loops/reactors%s; cells: -duration %v -warmup %v -requests %d; run took %.0fs\n\n",
		rep.Go, rep.OS, rep.Arch, rep.CPUs, rep.Loops, pinned, p.duration, p.warmup, p.requests, rep.Seconds)
	printMethod(os.Stdout, rep, p)
	printThroughput(os.Stdout, rep, list, p)
	printSummary(os.Stdout, rep, list, p, *target)
	printBuilds(os.Stdout, rep, list)
	fmt.Println()
	printMemory(os.Stdout, rep, p)
	if len(rep.RedisBenchmark) > 0 {
		fmt.Println()
		printRedisBenchmark(os.Stdout, rep)
	}
	for _, n := range rep.Notes {
		fmt.Println("NOTE:", n)
	}
	if *jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonPath, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "loadbench: -json: %v\n", err)
			os.Exit(1)
		}
	}
	switch {
	case rep.failed:
		os.Exit(1)
	case rep.wrong:
		os.Exit(3)
	}
}

// plan is what a run does: its cells and the memory scenarios' sizes.
type plan struct {
	cells            []cell
	duration, warmup time.Duration
	requests         int
	rounds           int           // -rounds: runs of each cell per server
	childWarmup      time.Duration // -child-warmup
	targetSet        bool          // -target given: the summary even with one round
	// settle is the pause between the end of a load and the "after" RSS.
	settle   time.Duration
	slow     netbench.SlowConfig // without Addr
	overload netbench.LoadConfig // without Addr
}

// cell is one throughput cell, the same for every server.
type cell struct{ pipeline, conns int }

// defaultPlan is the full matrix, about 70s with three servers.
var defaultPlan = plan{
	cells:    []cell{{1, 1}, {1, 16}, {1, 256}, {16, 1}, {16, 16}, {16, 256}},
	duration: 2 * time.Second,
	warmup:   300 * time.Millisecond,
	settle:   time.Second,
	slow:     netbench.SlowConfig{Conns: 16, Pipeline: 16, TextLen: 1024, Duration: 3 * time.Second, MaxBytes: 1 << 30},
	overload: netbench.LoadConfig{Conns: 256, Pipeline: 64, Mix: netbench.MixSleep, SleepMs: 50, Duration: 2 * time.Second},
}

// quickPlan is -quick: a smoke run of about 15s.
var quickPlan = plan{
	cells:    []cell{{1, 16}, {16, 16}, {16, 256}},
	duration: 300 * time.Millisecond,
	warmup:   100 * time.Millisecond,
	settle:   300 * time.Millisecond,
	slow:     netbench.SlowConfig{Conns: 16, Pipeline: 16, TextLen: 1024, Duration: time.Second, MaxBytes: 256 << 20},
	overload: netbench.LoadConfig{Conns: 256, Pipeline: 64, Mix: netbench.MixSleep, SleepMs: 50, Duration: 500 * time.Millisecond},
}

// overloadLimits are stepsd's Limiter bounds in the overload scenario:
// 256×64 SLEEPs in flight are far beyond them.
var overloadLimits = limits{concurrent: 1000, queue: 1000}

// report is every result of a run, also written by -json.
type report struct {
	Go, OS, Arch string
	CPUs, Loops  int
	Pin          bool // stepsd's reactors pinned
	ChildProcs   int  `json:",omitempty"` // the children's GOMAXPROCS (0: default)
	Duration     string
	Warmup       string
	Requests     int
	Quick        bool
	Seconds      float64 // the whole run
	Rounds       int     // -rounds
	ServerCPUs   string  `json:",omitempty"` // -server-cpus as resolved: a CPU list
	LoadCPUs     string  `json:",omitempty"` // -load-cpus as resolved

	RBTests   string `json:",omitempty"` // redis-benchmark's -t
	RBThreads int    `json:",omitempty"` // redis-benchmark's --threads (0: its one thread)

	Throughput     []cellResult
	Memory         []memResult
	RedisBenchmark []rbResult `json:",omitempty"`
	Notes          []string

	failed bool // a run failed: exit 1
	wrong  bool // wrong replies where none are expected: exit 3
}

// cellResult is one server's run of one throughput cell (with -rounds
// above 1, what its rounds make together: see aggregate).
type cellResult struct {
	Server     string
	Pipeline   int
	Conns      int
	Requests   int64            // over every round
	Errors     int64            // over every round
	ErrCodes   map[string]int64 `json:",omitempty"`
	ElapsedSec float64
	ReqPerSec  float64 // the median of the rounds
	P50us      float64 // latencies: the median round's
	P99us      float64
	P999us     float64
	RSSEndMiB  float64 // VmRSS at the end of the cell
	RSSPeakMiB float64 // VmHWM during the cell
	// CPUSec is the server process's CPU time (utime + stime) over the
	// measured time (of every round), CPUPerReqUs that per counted request
	// (the median of the rounds): the server's own cost, whatever share of
	// the CPUs the load generator took.
	CPUSec      float64
	CPUPerReqUs float64
	Error       string `json:",omitempty"`

	ReqPerSecMin, ReqPerSecMax float64 // over the rounds
	// RatioVsGnet is the median of the per-round ratios of req/s to gnet's
	// in the same round (RatioMin, RatioMax: their range), CPUVsGnet that
	// of CPU per request; 0 without gnet.
	RatioVsGnet, RatioMin, RatioMax, CPUVsGnet float64
	// PairedRounds is how many rounds have a ratio to gnet (gnet counted
	// something): with none, RatioVsGnet is no figure; with some, a 0
	// there is a server that counted nothing, a miss.
	PairedRounds int `json:",omitempty"`
	// LoadBusy is the median share of its CPUs the load generator used
	// over the measured time, LoadBusyMax the highest of the rounds.
	LoadBusy, LoadBusyMax float64
	Rounds                []roundResult `json:",omitempty"` // with -rounds above 1
}

// memResult is one server's memory scenario. For the throughput matrix
// (Scenario "matrix"), Peak is the highest cell peak.
type memResult struct {
	Server       string
	Scenario     string
	Requests     int64 // replies received; slow readers: requests written
	ReqPerSec    float64
	Errors       int64
	ErrCodes     map[string]int64 `json:",omitempty"`
	RSSBeforeMiB float64
	RSSPeakMiB   float64
	RSSEndMiB    float64 // at the end of the load, before the connections close
	RSSAfterMiB  float64 // settle after they closed
	Error        string  `json:",omitempty"`
}

// Scenario names of the memory table.
const (
	scenarioMatrix   = "matrix"
	scenarioSlow     = "slow readers"
	scenarioOverload = "overload"
)

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func (rep *report) note(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	rep.Notes = append(rep.Notes, msg)
	fmt.Fprintln(os.Stderr, "loadbench:", msg)
}

// runSlow runs the slow-reader scenario against a fresh child of server.
func runSlow(rep *report, server string, loops int, p plan) {
	fmt.Fprintf(os.Stderr, "%s: slow readers\n", server)
	mem := memResult{Server: server, Scenario: scenarioSlow}
	cfg := p.slow
	runMemory(rep, &mem, server, loops, p, nil, func(ch *child, atEnd func()) error {
		cfg.Addr = ch.addr
		res, err := netbench.RunSlowReaders(cfg, atEnd)
		mem.Requests = res.Requests
		if res.Elapsed > 0 {
			mem.ReqPerSec = float64(res.Requests) / res.Elapsed.Seconds()
		}
		if cfg.MaxBytes > 0 && res.Bytes >= cfg.MaxBytes {
			rep.note("%s, slow readers: the cap of %d MiB written was reached after %v (the connections stayed open until %v)",
				server, cfg.MaxBytes>>20, res.Writing.Round(time.Millisecond), cfg.Duration)
		}
		return err
	})
}

// runOverload runs the SLEEP overload against a fresh child of server.
func runOverload(rep *report, server string, loops int, p plan) {
	fmt.Fprintf(os.Stderr, "%s: overload\n", server)
	mem := memResult{Server: server, Scenario: scenarioOverload}
	var extra []string
	if b := baseServer(server); b == serverStepsd || b == serverStepsdFree || b == serverStepsdShared {
		extra = []string{fmt.Sprintf("-concurrent=%d", overloadLimits.concurrent), fmt.Sprintf("-queue=%d", overloadLimits.queue)}
	}
	cfg := p.overload
	runMemory(rep, &mem, server, loops, p, extra, func(ch *child, atEnd func()) error {
		cfg.Addr = ch.addr
		res, err := netbench.RunLoad(cfg)
		atEnd() // the connections are closed, but a moment ago
		mem.Requests, mem.ReqPerSec, mem.Errors, mem.ErrCodes = res.Requests, res.ReqPerSec, res.Errors, res.ErrCodes
		return err
	})
}

// runMemory runs one memory scenario against a fresh child: RSS before,
// load (which calls atEnd at its end, before its connections close), RSS
// after p.settle.
func runMemory(rep *report, mem *memResult, server string, loops int, p plan, extra []string, load func(ch *child, atEnd func()) error) {
	defer func() { rep.Memory = append(rep.Memory, *mem) }()
	ch, err := startChild(server, loops, extra...)
	if err != nil {
		rep.failed = true
		mem.Error = err.Error()
		rep.note("%s, %s: not run: %v", server, mem.Scenario, err)
		return
	}
	defer func() {
		if err := ch.stop(); err != nil {
			rep.failed = true
			rep.note("%v", err)
		}
	}()
	mem.RSSBeforeMiB = mib(ch.rss())
	peakOK := ch.resetPeak() == nil
	s := ch.sample(50 * time.Millisecond)
	var end int64
	err = load(ch, func() { end = ch.rss() })
	_, sampled := s.stop()
	_, hwm, _ := ch.mem()
	if !peakOK {
		hwm = 0
	}
	mem.RSSEndMiB, mem.RSSPeakMiB = mib(end), mib(max(hwm, sampled, end))
	if err != nil {
		rep.failed = true
		mem.Error = err.Error()
		rep.note("%s, %s: %v", server, mem.Scenario, err)
	}
	time.Sleep(p.settle)
	mem.RSSAfterMiB = mib(ch.rss())
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// printThroughput prints the throughput table, the servers of each cell
// side by side.
func printThroughput(w io.Writer, rep *report, servers []string, p plan) {
	cells := [][]string{{"server", "pipeline", "conns", "req/s", "p50", "p99", "p99.9", "errors", "ratio vs gnet", "CPU µs/req", "CPU vs gnet", "RSS peak MiB"}}
	// Columns after today's twelve, so that readers of those keep working:
	// only where -rounds or the CPU sets are on.
	extra := p.rounds > 1 || cpus.on()
	if extra {
		cells[0] = append(cells[0], "req/s range", "ratio range", "load CPU")
	}
	find := func(server string, c cell) (cellResult, bool) {
		for _, r := range rep.Throughput {
			if r.Server == server && r.Pipeline == c.pipeline && r.Conns == c.conns {
				return r, true
			}
		}
		return cellResult{}, false
	}
	for _, c := range p.cells {
		for _, s := range servers {
			r, ok := find(s, c)
			if !ok {
				continue
			}
			_, hasGnet := find(gnetOf(s, servers), c)
			row := []string{s, fmt.Sprint(c.pipeline), fmt.Sprint(c.conns),
				fmt.Sprintf("%.0f", r.ReqPerSec), fmtLatency(r.P50us), fmtLatency(r.P99us), fmtLatency(r.P999us),
				fmt.Sprint(r.Errors), "", fmt.Sprintf("%.2f", r.CPUPerReqUs), "", fmt.Sprintf("%.1f", r.RSSPeakMiB)}
			// The ratios are the medians of the per-round ratios (with
			// one round, this row's figure over gnet's).
			if hasGnet && r.PairedRounds > 0 {
				row[8] = fmt.Sprintf("%.2fx", r.RatioVsGnet)
			}
			if hasGnet && r.CPUVsGnet > 0 {
				row[10] = fmt.Sprintf("%.2fx", r.CPUVsGnet)
			}
			if r.Error != "" {
				row[7] += " + FAIL"
			}
			if extra {
				row = append(row, "-", "-", "-")
				if p.rounds > 1 {
					row[12] = fmtRange(r.ReqPerSecMin, r.ReqPerSec, r.ReqPerSecMax)
					if hasGnet && r.PairedRounds > 0 && s != gnetOf(s, servers) {
						row[13] = fmt.Sprintf("%.2f-%.2fx", r.RatioMin, r.RatioMax)
					}
				}
				if r.LoadBusy > 0 {
					row[14] = fmt.Sprintf("%.0f%%", 100*r.LoadBusy)
					if p.rounds > 1 {
						row[14] += fmt.Sprintf(" (max %.0f%%)", 100*r.LoadBusyMax)
					}
				}
			}
			cells = append(cells, row)
		}
	}
	mdtable.Write(w, cells, 1, 11)
}

// printMemory prints the memory table.
func printMemory(w io.Writer, rep *report, p plan) {
	fmt.Fprintf(w, "memory: %s: every cell above, one child; %s: %d conns write %d×ECHO of %d B per write for %v (at most %d MiB), never read; %s: %d conns × pipeline %d of SLEEP %d for %v (stepsd: Concurrent %d, Queue %d). RSS after = %v after the connections closed.\n\n",
		scenarioMatrix, scenarioSlow, p.slow.Conns, p.slow.Pipeline, p.slow.TextLen, p.slow.Duration, p.slow.MaxBytes>>20,
		scenarioOverload, p.overload.Conns, p.overload.Pipeline, p.overload.SleepMs, p.overload.Duration,
		overloadLimits.concurrent, overloadLimits.queue, p.settle)
	cells := [][]string{{"server", "scenario", "requests", "req/s", "errors", "RSS before MiB", "peak", "end", "after", "ERR codes"}}
	for _, scenario := range []string{scenarioMatrix, scenarioSlow, scenarioOverload} {
		for _, m := range rep.Memory {
			if m.Scenario != scenario {
				continue
			}
			row := []string{m.Server, m.Scenario, fmt.Sprint(m.Requests), fmt.Sprintf("%.0f", m.ReqPerSec), fmt.Sprint(m.Errors),
				fmt.Sprintf("%.1f", m.RSSBeforeMiB), fmt.Sprintf("%.1f", m.RSSPeakMiB), fmt.Sprintf("%.1f", m.RSSEndMiB), fmt.Sprintf("%.1f", m.RSSAfterMiB),
				fmtCodes(m.ErrCodes)}
			if m.Scenario == scenarioMatrix {
				row[3] = "" // the cells' rates are above
			}
			if m.Error != "" {
				row[4] += " + FAIL"
			}
			cells = append(cells, row)
		}
	}
	mdtable.Write(w, cells, 2, 8)
}

// fmtCodes shows ERR counts by code, sorted: "DefenseRejected=812".
func fmtCodes(codes map[string]int64) string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(codes)) {
		parts = append(parts, fmt.Sprintf("%s=%d", code, codes[code]))
	}
	return strings.Join(parts, " ")
}

// fmtLatency shows microseconds with three significant digits.
func fmtLatency(us float64) string {
	switch {
	case us <= 0:
		return "-"
	case us < 1000:
		return fmt.Sprintf("%.0fµs", us)
	case us < 10_000:
		return fmt.Sprintf("%.2fms", us/1000)
	case us < 1_000_000:
		return fmt.Sprintf("%.1fms", us/1000)
	}
	return fmt.Sprintf("%.2fs", us/1e6)
}
