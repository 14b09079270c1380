package main

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{"0", []int{0}, ""},
		{"0-3", []int{0, 1, 2, 3}, ""},
		{"8, 0-1 ,4", []int{0, 1, 4, 8}, ""},
		{"3-3", []int{3}, ""},
		{"", nil, "not a CPU list"},
		{"a", nil, "not a CPU list"},
		{"1-", nil, "not a CPU list"},
		{"-1", nil, "not a CPU list"},
		{"3-1", nil, "not a CPU list"},
		{"0,,1", nil, "not a CPU list"},
		{"0-2,2", nil, "names CPU 2 twice"},
		{"0-99999", nil, "too large"},
	} {
		got, err := parseCPUList(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseCPUList(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if back := fmtCPUList(got); back != strings.Join(strings.Fields(strings.ReplaceAll(fmtCPUList(tc.want), ",", " ")), ",") {
			t.Errorf("fmtCPUList(%v) = %q", got, back)
		}
	}
}

func TestFmtCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1, 2, 3}, "0-3"},
		{[]int{0, 1, 4, 8, 9}, "0-1,4,8-9"},
		{[]int{1, 3, 5}, "1,3,5"},
	} {
		if got := fmtCPUList(tc.in); got != tc.want {
			t.Errorf("fmtCPUList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPlanCPUs(t *testing.T) {
	sixteen := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	two := []int{0, 1}
	odd := []int{2, 3, 5, 7} // a process confined by taskset or a cgroup
	siblings := []int{0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15}
	for _, tc := range []struct {
		name         string
		allowed      []int
		loops        int
		server, load string
		wantS, wantL []int
		err          string
	}{
		{"off", sixteen, 8, "", "", nil, nil, ""},
		{"auto 1", sixteen, 1, "auto", "", []int{0}, sixteen[1:], ""},
		{"auto 8", sixteen, 8, "auto", "", sixteen[:8], sixteen[8:], ""},
		{"auto 8, rest", sixteen, 8, "auto", "rest", sixteen[:8], sixteen[8:], ""},
		{"auto 15", sixteen, 15, "auto", "", sixteen[:15], []int{15}, ""},
		{"auto 16: too few", sixteen, 16, "auto", "", nil, nil, "16 loops/reactors need 16 CPUs for the server and at least 1 for the load generator, but this process may run on 16 CPUs (0-15)"},
		{"auto on 2 CPUs", two, 1, "auto", "", []int{0}, []int{1}, ""},
		{"auto 2 on 2 CPUs", two, 2, "auto", "", nil, nil, "need 2 CPUs for the server and at least 1"},
		{"auto on a confined set", odd, 2, "auto", "", []int{2, 3}, []int{5, 7}, ""},
		{"list", sixteen, 4, "0-3", "8-11", []int{0, 1, 2, 3}, []int{8, 9, 10, 11}, ""},
		{"list, rest", sixteen, 4, "4-7", "", []int{4, 5, 6, 7}, append([]int{0, 1, 2, 3}, sixteen[8:]...), ""},
		{"load only", sixteen, 4, "", "12-15", sixteen[:12], sixteen[12:], ""},
		{"load only, rest server", sixteen, 4, "rest", "12-15", sixteen[:12], sixteen[12:], ""},
		{"overlap", sixteen, 4, "0-3", "3-6", nil, nil, "share CPUs 3"},
		{"not allowed", odd, 2, "0-1", "", nil, nil, "CPUs 0-1 are not among the 4 CPUs this process may run on (2-3,5,7)"},
		{"load not allowed", odd, 2, "2", "4", nil, nil, "-load-cpus 4: CPUs 4 are not among"},
		{"server takes all", two, 1, "0-1", "", nil, nil, "no CPU is left for the load generator"},
		{"load takes all", two, 1, "", "0-1", nil, nil, "no CPU is left for the server"},
		{"rest alone", sixteen, 4, "", "rest", nil, nil, "needs -server-cpus auto or a list"},
		{"load auto", sixteen, 4, "auto", "auto", nil, nil, "-load-cpus takes a CPU list"},
		{"bad list", sixteen, 4, "0-", "", nil, nil, "-server-cpus: \"0-\" is not a CPU list"},
		{"half 1", sixteen, 1, "half", "", sixteen[:8], sixteen[8:], ""},
		{"half 8", sixteen, 8, "half", "", sixteen[:8], sixteen[8:], ""},
		{"half 9: too few", sixteen, 9, "half", "", nil, nil, "9 loops/reactors need 18 CPUs, half of them for the server, but this process may run on 16"},
		{"half on 2 CPUs", two, 1, "half", "", []int{0}, []int{1}, ""},
		{"half on 1 CPU", []int{0}, 1, "half", "", nil, nil, "need 2 CPUs"},
		{"half on 3 CPUs", []int{0, 1, 2}, 1, "half", "", []int{0}, []int{1, 2}, ""},
		// hyperthreads i and i+8 on core i, ordered by core: half takes
		// whole cores, auto the first -loops threads in that order
		{"half, siblings", siblings, 4, "half", "", []int{0, 1, 2, 3, 8, 9, 10, 11}, []int{4, 5, 6, 7, 12, 13, 14, 15}, ""},
		{"auto, siblings", siblings, 2, "auto", "", []int{0, 8}, []int{1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15}, ""},
		{"load half", sixteen, 4, "", "half", nil, nil, "-load-cpus takes a CPU list or \"rest\", not \"half\""},
	} {
		p, err := planCPUs(tc.allowed, tc.loops, tc.server, tc.load)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: planCPUs = %v, %v; want an error with %q", tc.name, p, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(p.server, tc.wantS) || !slices.Equal(p.load, tc.wantL) {
			t.Errorf("%s: planCPUs = server %v load %v, %v; want server %v load %v", tc.name, p.server, p.load, err, tc.wantS, tc.wantL)
		}
		if p.on() != (tc.wantS != nil) {
			t.Errorf("%s: on() = %v", tc.name, p.on())
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
		idx  int
	}{
		{nil, 0, -1},
		{[]float64{5}, 5, 0},
		{[]float64{3, 1}, 2, 1},              // mean of the middle two; the lower's round
		{[]float64{3, 1, 2}, 2, 2},           // odd: the middle value
		{[]float64{10, 40, 20, 30}, 25, 2},   // even: (20+30)/2, round of 20
		{[]float64{1.7, 1, 1, 1, 0.6}, 1, 2}, // sorted: 0.6 1 1 1 1.7, stable
		{[]float64{2, 2, 2}, 2, 1},           // equal values: the middle of them in order
	} {
		in := slices.Clone(tc.in)
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("median changed its input: %v -> %v", in, tc.in)
		}
		if got := medianIndex(tc.in); got != tc.idx {
			t.Errorf("medianIndex(%v) = %d, want %d", tc.in, got, tc.idx)
		}
	}
}

func TestAggregate(t *testing.T) {
	rr := func(rate, cpu, busy float64) roundResult {
		return roundResult{ReqPerSec: rate, CPUPerReqUs: cpu, LoadBusy: busy, Requests: int64(rate / 2), P99us: rate / 1000}
	}
	c := cell{16, 256}
	for _, tc := range []struct {
		name                          string
		rs, gnet                      []roundResult
		rate, lo, hi                  float64
		ratio, rmin, rmax, cpu, cpuVs float64
		p99                           float64
	}{
		{
			// gnet moves 1.7x between rounds; each round's pair moves with
			// it, and the paired ratios are steadier than their rates.
			name: "paired",
			rs:   []roundResult{rr(3.0e6, 0.9, 0.5), rr(1.8e6, 1.0, 0.4), rr(2.7e6, 0.8, 0.6)},
			gnet: []roundResult{rr(3.3e6, 0.8, 0.5), rr(2.0e6, 0.9, 0.4), rr(3.0e6, 0.8, 0.6)},
			rate: 2.7e6, lo: 1.8e6, hi: 3.0e6,
			ratio: 0.9, rmin: 0.9, rmax: 3.0 / 3.3, cpu: 0.9, cpuVs: 1.0 / 0.9, p99: 2700,
		},
		{
			name: "one round",
			rs:   []roundResult{rr(1e6, 1.2, 0.3)},
			gnet: []roundResult{rr(2e6, 0.6, 0.3)},
			rate: 1e6, lo: 1e6, hi: 1e6, ratio: 0.5, rmin: 0.5, rmax: 0.5, cpu: 1.2, cpuVs: 2, p99: 1000,
		},
		{
			name: "no gnet",
			rs:   []roundResult{rr(1e6, 1, 0), rr(3e6, 3, 0)},
			rate: 2e6, lo: 1e6, hi: 3e6, cpu: 2, p99: 1000,
		},
		{
			// a round whose gnet run counted nothing has no ratio
			name: "gnet round failed",
			rs:   []roundResult{rr(1e6, 1, 0), rr(1e6, 1, 0)},
			gnet: []roundResult{rr(2e6, 1, 0), rr(0, 0, 0)},
			rate: 1e6, lo: 1e6, hi: 1e6, ratio: 0.5, rmin: 0.5, rmax: 0.5, cpu: 1, cpuVs: 1, p99: 1000,
		},
	} {
		got := aggregate("stepsd", c, tc.rs, tc.gnet, true)
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
		if !near(got.ReqPerSec, tc.rate) || !near(got.ReqPerSecMin, tc.lo) || !near(got.ReqPerSecMax, tc.hi) {
			t.Errorf("%s: req/s %v [%v, %v], want %v [%v, %v]", tc.name, got.ReqPerSec, got.ReqPerSecMin, got.ReqPerSecMax, tc.rate, tc.lo, tc.hi)
		}
		if !near(got.RatioVsGnet, tc.ratio) || !near(got.RatioMin, tc.rmin) || !near(got.RatioMax, tc.rmax) {
			t.Errorf("%s: ratio %v [%v, %v], want %v [%v, %v]", tc.name, got.RatioVsGnet, got.RatioMin, got.RatioMax, tc.ratio, tc.rmin, tc.rmax)
		}
		if !near(got.CPUPerReqUs, tc.cpu) || !near(got.CPUVsGnet, tc.cpuVs) {
			t.Errorf("%s: CPU %v (%vx), want %v (%vx)", tc.name, got.CPUPerReqUs, got.CPUVsGnet, tc.cpu, tc.cpuVs)
		}
		if got.P99us != tc.p99 {
			t.Errorf("%s: p99 %v, want the median round's %v", tc.name, got.P99us, tc.p99)
		}
		var req int64
		for _, r := range tc.rs {
			req += r.Requests
		}
		if got.Requests != req || len(got.Rounds) != len(tc.rs) {
			t.Errorf("%s: requests %d over %d rounds, want %d over %d", tc.name, got.Requests, len(got.Rounds), req, len(tc.rs))
		}
	}
}

func TestFmtRange(t *testing.T) {
	for _, tc := range []struct {
		lo, mid, hi float64
		want        string
	}{
		{90, 100, 110, "-10%/+10%"},
		{100, 100, 100, "+0%/+0%"},
		{50, 100, 170, "-50%/+70%"},
		{0, 0, 0, "-"},
	} {
		if got := fmtRange(tc.lo, tc.mid, tc.hi); got != tc.want {
			t.Errorf("fmtRange(%v, %v, %v) = %q, want %q", tc.lo, tc.mid, tc.hi, got, tc.want)
		}
	}
}

// TestZeroRatioIsAMiss checks that a server that counted nothing in every
// round of a cell, against a gnet that did, reads 0.00x and is named below
// the target, not left out as if gnet had not run.
func TestZeroRatioIsAMiss(t *testing.T) {
	c := cell{16, 256}
	gnet := []roundResult{{ReqPerSec: 2e6, CPUPerReqUs: 1}, {ReqPerSec: 2e6, CPUPerReqUs: 1}, {ReqPerSec: 2e6, CPUPerReqUs: 1}}
	dead := []roundResult{{Error: "reset"}, {Error: "reset"}, {Error: "reset"}}
	rep := &report{Throughput: []cellResult{
		aggregate(serverStepsd, c, dead, gnet, true),
		aggregate(serverGnet, c, gnet, gnet, true),
	}}
	p := plan{cells: []cell{c}, rounds: 3}
	var sum, table strings.Builder
	printSummary(&sum, rep, []string{serverStepsd, serverGnet}, p, 0.9)
	if want := ">= 0.90x in 0 of 1 cells"; !strings.Contains(sum.String(), want) || !strings.Contains(sum.String(), "below 0.90x: P16c256 0.00x") {
		t.Errorf("summary %q, want %q and P16c256 0.00x below target", sum.String(), want)
	}
	printThroughput(&table, rep, []string{serverStepsd, serverGnet}, p)
	if !strings.Contains(table.String(), " 0.00x |") {
		t.Errorf("table shows no 0.00x ratio for the server that counted nothing:\n%s", table.String())
	}
}

// TestPinInsideServerCPUs: stepsd -pin pins reactor i to CPU i modulo the
// CPUs its process may use (reactor.NewGroup), by number: with the servers'
// CPUs elsewhere than 0..n-1, that pins reactors onto the load's CPUs.
func TestPinInsideServerCPUs(t *testing.T) {
	for _, tc := range []struct {
		server []int
		loops  int
		bad    string // "": fine
	}{
		{nil, 8, ""},
		{[]int{0, 1, 2, 3, 4, 5, 6, 7}, 8, ""},
		{[]int{0, 1, 2, 3, 4, 5, 6, 7}, 4, ""},
		{[]int{0, 1}, 4, ""}, // wraps onto 0 and 1
		{[]int{8, 9, 10, 11, 12, 13, 14, 15}, 8, "0-7"},
		{[]int{0, 1, 2, 3, 8, 9, 10, 11}, 8, "4-7"}, // half with hyperthread pairs (i, i+8)
		{[]int{0, 1, 2, 3, 8, 9, 10, 11}, 4, ""},
		{[]int{1}, 1, "0"},
	} {
		err := checkPin(tc.server, tc.loops)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("checkPin(%v, %d): %v", tc.server, tc.loops, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), "CPUs "+tc.bad+" ")):
			t.Errorf("checkPin(%v, %d): %v; want an error naming CPUs %s", tc.server, tc.loops, err, tc.bad)
		}
	}
}

// TestSummaryWithOneRound: with CPU sets, or -target given, a run of one
// round still prints the summary (the saturated generator's cells above
// all); a plain run prints none.
func TestSummaryWithOneRound(t *testing.T) {
	c := cell{1, 256}
	g := []roundResult{{ReqPerSec: 2e6, LoadBusy: 0.95}}
	s := []roundResult{{ReqPerSec: 1e6, LoadBusy: 0.5}}
	rep := &report{Throughput: []cellResult{aggregate(serverStepsd, c, s, g, false), aggregate(serverGnet, c, g, g, false)}}
	servers := []string{serverStepsd, serverGnet}
	defer func(old cpuPlan) { cpus = old }(cpus)
	for _, tc := range []struct {
		name      string
		plan      cpuPlan
		targetSet bool
		want      []string
	}{
		{"plain", cpuPlan{}, false, nil},
		{"cpu sets", cpuPlan{server: []int{0}, load: []int{1}}, false, []string{"below 0.90x: P1c256 0.50x", "load generator used 90% or more of its CPUs in a round of: P1c256 gnet 95%"}},
		{"-target", cpuPlan{}, true, []string{"below 0.90x: P1c256 0.50x"}},
	} {
		cpus = tc.plan
		var b strings.Builder
		printSummary(&b, rep, servers, plan{cells: []cell{c}, rounds: 1, targetSet: tc.targetSet}, 0.9)
		if tc.want == nil && strings.Contains(b.String(), "summary:") {
			t.Errorf("%s: a summary: %q", tc.name, b.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: summary %q lacks %q", tc.name, b.String(), w)
			}
		}
	}
}

// TestChildGOMAXPROCS: the method line says what the children's runtimes
// use: a GOMAXPROCS in loadbench's environment is inherited by them and
// overrides their CPU mask.
func TestChildGOMAXPROCS(t *testing.T) {
	for _, tc := range []struct {
		cpus, flag int
		env, want  string
	}{
		{8, 0, "", "GOMAXPROCS 8"},
		{8, 4, "", "GOMAXPROCS 4 (-child-procs)"},
		{8, 4, "16", "GOMAXPROCS 4 (-child-procs)"},
		{8, 0, "16", "GOMAXPROCS 16 (inherited from loadbench's environment)"},
		{8, 0, " ", "GOMAXPROCS 8"},
	} {
		if got := childGOMAXPROCS(tc.cpus, tc.flag, tc.env); got != tc.want {
			t.Errorf("childGOMAXPROCS(%d, %d, %q) = %q, want %q", tc.cpus, tc.flag, tc.env, got, tc.want)
		}
	}
}
