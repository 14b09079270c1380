package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickSubset runs the harness as make test can afford: -quick on two
// small scenarios with a fixed count of ops, and checks the table, the
// benchstat file and the JSON file.
func TestQuickSubset(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	code := run([]string{"-quick", "-scenarios", "^engine/Simple$|^reactor/TimerAddCancel$", "-duration", "200x", "-o", dir}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"ours ÷ peer (lower is better)",
		"| engine/Simple ", "asyncsteps/driver=loop", "asyncsteps/driver=goroutine", "goroutines",
		"| reactor/TimerAddCancel ", "time.AfterFunc",
		"saved: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "met?") {
		t.Errorf("the table still judges targets:\n%s", out)
	}
	if !strings.Contains(stderr.String(), "[5/5 ") {
		t.Errorf("no progress line for the last of 5 runs on stderr:\n%s", stderr.String())
	}

	txts, _ := filepath.Glob(filepath.Join(dir, "bench-*.txt"))
	jsons, _ := filepath.Glob(filepath.Join(dir, "bench-*.json"))
	if len(txts) != 1 || len(jsons) != 1 {
		t.Fatalf("files written: %v %v, want one .txt and one .json", txts, jsons)
	}
	data, err := os.ReadFile(txts[0])
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if name, r, ok := parseBenchLine(line); ok {
			names[name] = true
			if r.N < 1 || r.NsPerUnit <= 0 || !r.Mem {
				t.Errorf("benchstat line %q: N %d, %v ns/op, mem %v", line, r.N, r.NsPerUnit, r.Mem)
			}
		}
	}
	for _, want := range []string{
		"BenchmarkSimple/impl=asyncsteps/driver=loop", "BenchmarkSimple/impl=asyncsteps/driver=goroutine", "BenchmarkSimple/impl=goroutines",
		"BenchmarkTimerAddCancel/impl=asyncsteps", "BenchmarkTimerAddCancel/impl=time.AfterFunc",
	} {
		if !names[want] {
			t.Errorf("the benchstat file lacks %s:\n%s", want, data)
		}
	}
	var rep report
	data, err = os.ReadFile(jsons[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if len(rep.Cases) != 2 || len(rep.Cases[0].Impls) != 3 || len(rep.Cases[0].Impls[0].Runs) != 1 {
		t.Errorf("JSON cases: %+v, want 2 cases, the first with 3 implementations of 1 run", rep.Cases)
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"-h"}, 0, "ours ÷ peer"},
		{[]string{"-count", "0"}, 2, "-count must be at least 1"},
		{[]string{"-scenarios", "nothing-matches-this"}, 2, "no scenario matches"},
		{[]string{"-scenarios", "("}, 2, "-scenarios"},
		{[]string{"-duration", "soon"}, 2, "-duration"},
		{[]string{"-cpus", "0"}, 2, "-cpus 0"},
		{[]string{"extra"}, 2, "unexpected arguments"},
	} {
		var stdout, stderr strings.Builder
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}

func TestList(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := run([]string{"-list"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"engine/Simple", "reactor/RealSimple", "syncprim/MutexContended", "abi/CStep", "server/Load"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("-list lacks %s:\n%s", want, stdout.String())
		}
	}
}

func TestFmtCount(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0"}, {0.0001, "<1"}, {0.99, "<1"}, {1, "1"}, {1.4, "1"}, {2.6, "3"}, {112, "112"}} {
		if got := fmtCount(tc.v); got != tc.want {
			t.Errorf("fmtCount(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestParseBenchLine(t *testing.T) {
	name, r, ok := parseBenchLine("BenchmarkCStep/impl=c/add=AddC-2   \t 1000000\t        97.20 ns/op\t       0 B/op\t       0 allocs/op\t  3.5 p50-µs")
	if !ok || name != "BenchmarkCStep/impl=c/add=AddC" || r.N != 1000000 || r.NsPerUnit != 97.2 || !r.Mem || r.Metrics["p50-µs"] != 3.5 {
		t.Errorf("got %q %+v %v", name, r, ok)
	}
	for _, line := range []string{"PASS", "goos: linux", "BenchmarkX-2 notanumber 1 ns/op", "--- FAIL: BenchmarkX"} {
		if _, _, ok := parseBenchLine(line); ok {
			t.Errorf("%q parsed as a result", line)
		}
	}
}

func TestRatioOneWay(t *testing.T) {
	c := &caseResult{Unit: "op", Impls: []*implResult{
		{Impl: "asyncsteps", Ours: true, Runs: []runResult{{NsPerUnit: 50, Mem: true}}},
		{Impl: "goroutines", Runs: []runResult{{NsPerUnit: 200, Mem: true}}},
	}}
	var b strings.Builder
	printTable(&b, []*caseResult{c})
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[2], "0.25") || strings.Contains(lines[3], "4.00") {
		t.Errorf("ours ÷ peer should be 0.25 on ours' row and nothing on the peer's:\n%s", b.String())
	}
}
