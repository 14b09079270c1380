package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The tests run loadbench itself: this test binary, re-run with
// LOADBENCH_TEST_MAIN=1, is loadbench (main), and so are the server
// children it starts (os.Executable, with the variable inherited).
func TestMain(m *testing.M) {
	if os.Getenv("LOADBENCH_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// loadbench runs loadbench with args and returns its stdout, stderr and
// exit code.
func loadbench(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "LOADBENCH_TEST_MAIN=1")
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("loadbench %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

func TestFlagErrors(t *testing.T) {
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	n := len(allowed)
	all := fmtCPUList(allowed)
	type flagCase struct {
		args []string
		want string
	}
	var more []flagCase
	if last := slices.Max(allowed); last != 0 && n > 1 {
		// stepsd -pin would pin its one reactor to CPU 0, not the server's
		more = append(more, flagCase{[]string{"-pin", "-loops", "1", "-server-cpus", strconv.Itoa(last)}, "-pin with -server-cpus " + strconv.Itoa(last) + ": stepsd would pin reactors to CPUs 0 "})
	}
	for _, tc := range append([]flagCase{
		{[]string{"-rounds", "0"}, "-rounds must be 1 to 1000"},
		{[]string{"-rounds", "1001"}, "-rounds must be 1 to 1000"},
		{[]string{"-rounds", "x"}, "invalid value"},
		{[]string{"-target", "0"}, "-target must be a ratio above 0"},
		{[]string{"-target", "-1"}, "-target must be a ratio above 0"},
		{[]string{"-target", "NaN"}, "-target must be a ratio above 0"},
		{[]string{"-child-warmup", "-1s"}, "-child-warmup must not be negative"},
		// every CPU for the servers: none left for the load, whatever the machine
		{[]string{"-server-cpus", "auto", "-loops", strconv.Itoa(n)}, "need " + strconv.Itoa(n) + " CPUs for the server and at least 1 for the load generator"},
		{[]string{"-server-cpus", all}, "no CPU is left for the load generator"},
		{[]string{"-load-cpus", all}, "no CPU is left for the server"},
		{[]string{"-server-cpus", "0-3-4"}, "is not a CPU list"},
		{[]string{"-server-cpus", "100000"}, "are not among the"},
		{[]string{"-load-cpus", "rest"}, "needs -server-cpus auto or a list"},
		{[]string{"-servers", "gnet,stepsd,gnet"}, `-servers: "gnet" listed twice`},
		{[]string{"-servers", "gnet,gnet@b"}, `-servers: "gnet@b" needs -exe-b`},
		{[]string{"-servers", "gnet,redis@b", "-exe-b", os.Args[0]}, `-servers: unknown server "redis@b"`},
		{[]string{"-exe-b", filepath.Join(t.TempDir(), "none")}, "-exe-b: "},
		{[]string{"-cpuprofiles", "/nonexistent-dir"}, "-cpuprofiles /nonexistent-dir: not a directory"},
		{[]string{"-cpuprofiles", t.TempDir(), "-profile", "x"}, "-profile and -cpuprofiles exclude each other"},
	}, more...) {
		_, stderr, code := loadbench(t, append([]string{"-servers", "gnet", "-memory=false", "-redis-benchmark=false"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("loadbench %v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestPlainRunKeepsItsTable checks that a run without the new flags prints
// the table it always printed: twelve columns, no method line.
func TestPlainRunKeepsItsTable(t *testing.T) {
	stdout, stderr, code := loadbench(t, "-servers", "gnet", "-loops", "1", "-cells", "16x4", "-duration", "100ms", "-warmup", "20ms", "-memory=false", "-redis-benchmark=false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "method:") || strings.Contains(stdout, "summary:") {
		t.Errorf("a plain run prints a method or summary line:\n%s", stdout)
	}
	const header = "| server | pipeline | conns | req/s"
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, header) {
			if cols := strings.Count(line, "|") - 1; cols != 12 {
				t.Errorf("throughput header has %d columns, want 12: %s", cols, line)
			}
			return
		}
	}
	t.Errorf("no throughput table:\n%s", stdout)
}

// TestBuildBAndCPUProfiles runs gnet from this build and from -exe-b (the
// same program here), and net from -exe-b, in the same run, with
// -cpuprofiles: a row per build, net@b's ratio to gnet@b, the builds line,
// and a CPU profile of every child and of the load generator, as make pgo
// and devkit-run's AB=1 use them. Each cell ends at -requests, not at a
// time: a loaded machine can stall a server for longer than any short
// window, and a server that counted nothing has no ratio.
func TestBuildBAndCPUProfiles(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := loadbench(t, "-servers", "gnet,gnet@b,net@b", "-exe-b", os.Args[0], "-cpuprofiles", dir,
		"-loops", "1", "-cells", "16x4", "-duration", "60s", "-requests", "2000", "-warmup", "10ms", "-target", "0.9", "-redis-benchmark=false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"| gnet@b ", "| net@b ", "summary: net@b ÷ gnet@b req/s",
		"builds: gnet ÷ gnet@b (this build ÷ -exe-b's), median of 1 paired rounds (range): req/s P16c4 "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in the output:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "| "+scenarioSlow+" ") || strings.Contains(stdout, "| "+scenarioOverload+" ") {
		t.Errorf("-cpuprofiles ran the memory scenarios:\n%s", stdout)
	}
	for _, name := range []string{"gnet", "gnet@b", "net@b", "load"} {
		st, err := os.Stat(filepath.Join(dir, name+".cpu.prof"))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s's CPU profile: %v (size %d)", name, err, sizeOf(st))
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.heap.prof")); len(m) > 0 {
		t.Errorf("-cpuprofiles wrote other profiles too: %v", m)
	}
}

func sizeOf(st os.FileInfo) int64 {
	if st == nil {
		return 0
	}
	return st.Size()
}

// TestRoundsOnCPUSets runs two servers, two cells, three rounds, the
// servers on the first half of the CPUs and the load on the rest, and reads
// the JSON.
func TestRoundsOnCPUSets(t *testing.T) {
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("CPU sets need 2 CPUs; this process may run on %d", len(allowed))
	}
	server := fmtCPUList(sorted(allowed[:len(allowed)/2]))
	out := filepath.Join(t.TempDir(), "lb.json")
	stdout, stderr, code := loadbench(t, "-servers", "stepsd,gnet", "-loops", "1", "-cells", "1x1,16x4", "-rounds", "3",
		"-duration", "200ms", "-warmup", "20ms", "-memory=false", "-redis-benchmark=false", "-server-cpus", "half", "-child-warmup", "100ms", "-json", out)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	for _, want := range []string{"method: -child-warmup 100ms", "; -rounds 3:", "servers' processes on CPUs " + server + " ", "| req/s range | ratio range | load CPU", "summary: stepsd ÷ gnet req/s, median of 3 paired rounds"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Rounds != 3 || rep.ServerCPUs != server || rep.LoadCPUs != fmtCPUList(sorted(allowed[len(allowed)/2:])) {
		t.Errorf("report: rounds %d, server CPUs %q, load CPUs %q", rep.Rounds, rep.ServerCPUs, rep.LoadCPUs)
	}
	if len(rep.Throughput) != 4 {
		t.Fatalf("%d throughput rows, want 4", len(rep.Throughput))
	}
	// Only the shape: on a loaded machine a 200ms round of a server
	// confined to one CPU may count nothing, and CPU time comes in 10ms
	// ticks.
	var requests int64
	for _, r := range rep.Throughput {
		requests += r.Requests
		var sum int64
		for _, rr := range r.Rounds {
			sum += rr.Requests
		}
		if len(r.Rounds) != 3 || sum != r.Requests || r.ReqPerSecMin > r.ReqPerSec || r.ReqPerSec > r.ReqPerSecMax {
			t.Errorf("%s %dx%d: %d rounds of %d requests (row: %d), req/s %v not in [%v, %v]", r.Server, r.Pipeline, r.Conns, len(r.Rounds), sum, r.Requests, r.ReqPerSec, r.ReqPerSecMin, r.ReqPerSecMax)
		}
		if r.Server == serverGnet && r.PairedRounds > 0 && r.RatioVsGnet != 1 {
			t.Errorf("gnet's ratio to itself is %v", r.RatioVsGnet)
		}
		if r.Server == serverStepsd && (r.RatioMin > r.RatioVsGnet || r.RatioVsGnet > r.RatioMax) {
			t.Errorf("stepsd %dx%d: median ratio %v outside its range [%v, %v]", r.Pipeline, r.Conns, r.RatioVsGnet, r.RatioMin, r.RatioMax)
		}
	}
	if requests == 0 {
		t.Error("no requests counted in any round")
	}
}

// TestChildWarmupBeforeRedisBenchmark: -child-warmup also warms each
// child of the redis-benchmark rows (stepsd, gnet and redis-server alike)
// before its first measured test, as it does the matrix's.
func TestChildWarmupBeforeRedisBenchmark(t *testing.T) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		t.Skip("redis-benchmark is not installed")
	}
	_, stderr, code := loadbench(t, "-servers", "gnet", "-loops", "1", "-cells", "1x1", "-duration", "50ms", "-warmup", "10ms",
		"-memory=false", "-rb-cells", "1x1", "-rb-tests", "ping", "-rb-n", "100", "-child-warmup", "50ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	servers := []string{serverGnet}
	if _, err := exec.LookPath("redis-server"); err == nil {
		servers = append(servers, serverRedis)
	}
	for _, s := range servers {
		if want := s + ": redis-benchmark: -child-warmup 50ms at -P 1 -c 1, unmeasured"; !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
