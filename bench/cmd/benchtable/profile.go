package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// make profile: child processes per scenario (per driver of ours), so that
// each profile holds that scenario alone: the heap, allocation, mutex and
// block profiles are cumulative over a process's life. Two children per
// scenario: one with the CPU profile alone, one with the sampling
// profiles alone, because recording every allocation's and every blocking
// event's stack costs CPU (runtime.pcvalue, tracebackPCs) that would
// otherwise top the CPU profile of any scenario whose setup allocates.

// The rates of the profiles that sample: every allocation (the scenarios
// of ours allocate nothing once warm, so each one recorded is a finding,
// and this costs nothing where nothing is allocated), every contended
// mutex, and blocking events in proportion to 1µs of blocking.
const (
	profMemRate      = 1
	profMutexFrac    = 1
	profBlockRateNs  = 1000
	profTopNodeCount = 8
)

// profileKinds are the files of one scenario: <name>.<kind>.prof.
var profileKinds = []string{"cpu", "heap", "allocs", "mutex", "block"}

// profileTarget is one profiled implementation of ours.
type profileTarget struct {
	c    caseSpec
	impl implSpec
	file string // base name: engine-Simple-loop
}

func profileTargets(cases []caseSpec) []profileTarget {
	var ts []profileTarget
	for _, c := range cases {
		if c.suite == suiteServer {
			ts = append(ts, profileTarget{c: c, impl: implSpec{name: "stepsd", ours: true}, file: "server-stepsd"})
			continue
		}
		ours := 0
		for _, im := range c.impls {
			if im.ours {
				ours++
			}
		}
		for _, im := range c.impls {
			if !im.ours {
				continue
			}
			file := c.suite + "-" + c.name
			if ours > 1 {
				v := im.name
				if _, d, ok := strings.Cut(v, "driver="); ok {
					v = d
				}
				file += "-" + strings.NewReplacer("/", "-", "=", "-", "+", "").Replace(v)
			}
			ts = append(ts, profileTarget{c: c, impl: im, file: file})
		}
	}
	return ts
}

// profileAll writes the profiles of ours in every selected scenario to
// o.profileDir, then prints the top of each CPU profile.
func profileAll(o *options, root string, cases []caseSpec, stdout, stderr io.Writer) int {
	dir, err := filepath.Abs(o.profileDir)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		fmt.Fprintln(stderr, "benchtable: -profile:", err)
		return 2
	}
	ts := profileTargets(cases)
	p := newProgress(stderr, len(ts))
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "benchtable:", err)
		return 1
	}
	status := 0
	var done []profileTarget
	var results []string
	for _, t := range ts {
		p.step(fmt.Sprintf("profiling %s %s", t.c.id(), t.impl.name))
		var line string
		switch t.c.suite {
		case suiteABI:
			line, err = profileABI(o, root, dir, t)
		case suiteServer:
			line, err = profileServer(o, root, dir, t)
		default:
			line, err = runChildProfile(self, o, dir, t)
		}
		if err != nil {
			p.printf("benchtable: profiling %s %s: %v\n", t.c.id(), t.impl.name, err)
			status = 1
			continue
		}
		done = append(done, t)
		results = append(results, fmt.Sprintf("%-40s %s", t.file, line))
	}
	p.clear()
	fmt.Fprintf(stdout, "profiles of ours (%s), one process per scenario, in %s:\n\n", strings.Join(profileKinds, ", "), relTo(root, dir))
	for _, r := range results {
		fmt.Fprintln(stdout, "  "+r)
	}
	fmt.Fprintf(stdout, "\nRead one (from the repository root): go tool pprof -http=: %s/engine-Sequential-loop.cpu.prof\n(or -top; -sample_index=alloc_objects for *.allocs.prof). profiles/README.md says how to read them and what they show.\n",
		relTo(root, dir))
	for _, t := range done {
		top := exec.Command(goTool(), "tool", "pprof", "-top", "-nodecount="+strconv.Itoa(profTopNodeCount), filepath.Join(dir, t.file+".cpu.prof"))
		out, err := top.CombinedOutput()
		fmt.Fprintf(stdout, "\n== %s (%s %s): CPU, top %d\n", t.file, t.c.id(), t.impl.name, profTopNodeCount)
		if err != nil {
			fmt.Fprintf(stdout, "go tool pprof: %v\n", err)
		}
		stdout.Write(trimPprofHeader(out))
	}
	return status
}

// trimPprofHeader drops pprof's File/Build ID/Type lines, keeping the
// duration line and the table.
func trimPprofHeader(out []byte) []byte {
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		keep = append(keep, l)
	}
	return []byte(strings.Join(keep, "\n"))
}

// runChildProfile runs this program again as the child that profiles
// one in-process scenario; the child prints its result line.
func runChildProfile(self string, o *options, dir string, t profileTarget) (string, error) {
	var line string
	for _, pass := range []string{passCPU, passSampled} {
		cmd := exec.Command(self, "-profile-one", t.c.id()+"@"+t.impl.name+"@"+pass, "-profile", dir,
			"-duration", o.duration, "-cpus", strconv.Itoa(o.cpus), "-pin="+strconv.FormatBool(o.pin), "-timeout", o.timeout.String())
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("%s pass: %v: %s", pass, err, tail(strings.Split(stderr.String(), "\n"), 6))
		}
		if pass == passCPU {
			line = strings.TrimSpace(string(out))
		}
	}
	return line, nil
}

// The two passes of a profiled scenario.
const (
	passCPU     = "cpu"     // the CPU profile alone, nothing else sampled
	passSampled = "sampled" // heap, allocs, mutex and block, without the CPU profile
)

// profileOne is the child: it profiles one implementation of ours
// (-profile-one suite/Name@impl@pass) into o.profileDir and prints one
// line.
func profileOne(o *options, stderr io.Writer) int {
	id, rest, _ := strings.Cut(o.profileOne, "@")
	implName, pass, _ := strings.Cut(rest, "@")
	if pass == passSampled {
		runtime.MemProfileRate = profMemRate
	} else {
		runtime.MemProfileRate = 0
	}
	var t *profileTarget
	for _, c := range profileTargets(inProcessCases()) {
		if c.c.id() == id && c.impl.name == implName {
			t = &c
			break
		}
	}
	if t == nil || t.impl.fn == nil {
		fmt.Fprintf(stderr, "benchtable: -profile-one %q: no such in-process scenario\n", o.profileOne)
		return 2
	}
	base := filepath.Join(o.profileDir, t.file)
	p := newProgress(io.Discard, 1)
	if pass == passCPU {
		cpu, err := os.Create(base + ".cpu.prof")
		if err == nil {
			err = pprof.StartCPUProfile(cpu)
		}
		if err != nil {
			fmt.Fprintln(stderr, "benchtable:", err)
			return 1
		}
		r := runInProcess(id+"/"+implName, t.impl.fn, o.timeout, p, func(io.Writer) {})
		pprof.StopCPUProfile()
		if err := cpu.Close(); err != nil {
			fmt.Fprintln(stderr, "benchtable:", err)
			return 1
		}
		if r.Err != "" {
			fmt.Fprintf(stderr, "benchtable: %s: %s\n", o.profileOne, r.Err)
			return 1
		}
		fmt.Printf("%s/%s  %d B/op  %s allocs/op  (N=%d)\n", fmtTime(r.NsPerUnit), t.c.unit, int(r.BytesPerOp), fmtCount(r.AllocsPerOp), r.N)
		return 0
	}
	runtime.SetMutexProfileFraction(profMutexFrac)
	runtime.SetBlockProfileRate(profBlockRateNs)
	r := runInProcess(id+"/"+implName, t.impl.fn, o.timeout, p, func(io.Writer) {})
	runtime.GC() // the heap profile shows live memory as of the last collection
	for _, kind := range profileKinds[1:] {
		f, err := os.Create(base + "." + kind + ".prof")
		if err == nil {
			err = pprof.Lookup(kind).WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "benchtable:", err)
			return 1
		}
	}
	if r.Err != "" {
		fmt.Fprintf(stderr, "benchtable: %s: %s\n", o.profileOne, r.Err)
		return 1
	}
	return 0
}

// profileABI profiles ours in one abi scenario with go test's own
// profiling flags (-memprofile is the heap profile, which also holds the
// allocations: read it with -sample_index=alloc_objects).
func profileABI(o *options, root, dir string, t profileTarget) (string, error) {
	base := filepath.Join(dir, t.file)
	sub := ""
	if t.impl.name != "" {
		sub = "/^impl=" + regexpQuote(t.impl.name) + "$"
	}
	bench := "^Benchmark" + t.c.name + "$" + sub
	common := []string{"test", "-run", "^$", "-bench", bench, "-benchmem", "-benchtime", o.duration,
		"-o", filepath.Join(os.TempDir(), "benchtable-abi.test")}
	// Two runs, as for the in-process scenarios: the CPU profile alone,
	// then the sampling profiles.
	passes := [][]string{
		{"-cpuprofile", base + ".cpu.prof"},
		{"-memprofile", base + ".heap.prof", "-memprofilerate", strconv.Itoa(profMemRate),
			"-mutexprofile", base + ".mutex.prof", "-blockprofile", base + ".block.prof", "-blockprofilerate", strconv.Itoa(profBlockRateNs)},
	}
	var out []byte
	for k, extra := range passes {
		args := append(append(append([]string{}, common...), extra...), "./abi")
		cmd := exec.Command(goTool(), args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(o.cpus))
		got, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go test: %v: %s", err, tail(strings.Split(string(got), "\n"), 6))
		}
		if k == 0 {
			out = got
		}
	}
	for _, l := range strings.Split(string(out), "\n") {
		if name, r, ok := parseBenchLine(l); ok {
			return fmt.Sprintf("%s/%s  %d B/op  %s allocs/op  (N=%d, %s; allocations in the heap profile)", fmtTime(r.NsPerUnit), t.c.unit, int(r.BytesPerOp), fmtCount(r.AllocsPerOp), r.N, name), nil
		}
	}
	return "", fmt.Errorf("go test printed no result: %s", tail(strings.Split(string(out), "\n"), 6))
}

// profileServer profiles stepsd under cmd/loadbench's quick matrix:
// loadbench -profile makes stepsd's child write its profiles as it stops.
func profileServer(o *options, root, dir string, t profileTarget) (string, error) {
	tmp, err := os.MkdirTemp("", "benchtable-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "loadbench")
	build := exec.Command(goTool(), "build", "-o", bin, "./cmd/loadbench")
	build.Dir = filepath.Join(root, "bench")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cmd/loadbench: %v: %s", err, out)
	}
	start := time.Now()
	cmd := exec.Command(bin, "-quick", "-duration", "1s", "-servers", "stepsd", "-loops", strconv.Itoa(o.cpus), "-pin="+strconv.FormatBool(o.pin),
		"-profile", filepath.Join(dir, t.file))
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(o.cpus))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("cmd/loadbench: %v: %s", err, tail(strings.Split(string(out), "\n"), 6))
	}
	return fmt.Sprintf("stepsd serving cmd/loadbench's quick throughput matrix, 1s a cell (%s in all)", time.Since(start).Round(time.Second)), nil
}

// regexpQuote quotes the characters of an impl name that go test's -bench
// regexp would read as operators.
func regexpQuote(s string) string {
	return strings.NewReplacer("+", `\+`, ".", `\.`).Replace(s)
}
