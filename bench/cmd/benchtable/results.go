package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

// runResult is one run of one implementation.
type runResult struct {
	N           int                `json:"n"`
	NsPerUnit   float64            `json:"ns_per_unit"` // b.N counts units, so this is ns/op
	Mem         bool               `json:"mem"`         // BytesPerOp and AllocsPerOp were measured (not for a server in another process)
	BytesPerOp  float64            `json:"bytes_per_op"`
	AllocsPerOp float64            `json:"allocs_per_op"`
	Metrics     map[string]float64 `json:"metrics,omitempty"` // the benchmark's own (b.ReportMetric)
	Err         string             `json:"error,omitempty"`
}

// implResult is every run of one implementation of a case.
type implResult struct {
	Impl  string      `json:"impl"`
	Ours  bool        `json:"ours"`
	Bench string      `json:"bench"` // benchstat name, without the -GOMAXPROCS suffix
	Runs  []runResult `json:"runs"`
}

// caseResult is one row group of the table.
type caseResult struct {
	Suite   string        `json:"suite"`
	Name    string        `json:"name"`
	Unit    string        `json:"unit"`
	What    string        `json:"what"`
	Latency bool          `json:"latency"`
	Pkg     string        `json:"pkg"`
	Impls   []*implResult `json:"impls"`
}

func newCaseResult(c caseSpec) *caseResult {
	r := &caseResult{Suite: c.suite, Name: c.name, Unit: c.unit, What: c.what, Latency: c.latency, Pkg: c.pkg}
	for _, im := range c.impls {
		r.Impls = append(r.Impls, &implResult{Impl: im.name, Ours: im.ours, Bench: benchName(c.name, im.name)})
	}
	return r
}

// median is the run with the median time, or a failed run if any failed;
// ok is false when there is none.
func (ir *implResult) median() (runResult, bool) {
	if len(ir.Runs) == 0 {
		return runResult{}, false
	}
	for _, r := range ir.Runs {
		if r.Err != "" {
			return r, true
		}
	}
	s := slices.Clone(ir.Runs)
	slices.SortFunc(s, func(a, b runResult) int {
		switch {
		case a.NsPerUnit < b.NsPerUnit:
			return -1
		case a.NsPerUnit > b.NsPerUnit:
			return 1
		}
		return 0
	})
	return s[len(s)/2], true
}

// report is a whole run of the harness, also written as JSON.
type report struct {
	Go         string   `json:"go"`
	OS         string   `json:"os"`
	Arch       string   `json:"arch"`
	CPU        string   `json:"cpu"`
	NumCPU     int      `json:"num_cpu"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	Reactors   string   `json:"reactors"` // where the real reactors ran
	Args       []string `json:"args"`
	Count      int      `json:"count"`
	Duration   string   `json:"duration"`
	Started    string   `json:"started"`
	Seconds    float64  `json:"seconds"`

	Cases []*caseResult `json:"cases"`
	// ServerMemory is cmd/loadbench's memory table, as it printed it.
	ServerMemory string `json:"server_memory,omitempty"`
	// Server is cmd/loadbench's own JSON report.
	Server json.RawMessage `json:"server,omitempty"`
	Notes  []string        `json:"notes,omitempty"`
}

// failed reports whether a run failed.
func (rep *report) failed() bool {
	for _, c := range rep.Cases {
		for _, im := range c.Impls {
			for _, r := range im.Runs {
				if r.Err != "" {
					return true
				}
			}
		}
	}
	return false
}

// writeBenchstat writes every run in the format of `go test -bench`, so
// that benchstat reads it: a configuration header, then one line per run,
// named BenchmarkName/impl=...-GOMAXPROCS, runs of one case interleaved as
// they ran.
func writeBenchstat(w io.Writer, rep *report) error {
	fmt.Fprintf(w, "goos: %s\ngoarch: %s\n", rep.OS, rep.Arch)
	if rep.CPU != "" {
		fmt.Fprintf(w, "cpu: %s\n", rep.CPU)
	}
	fmt.Fprintf(w, "reactors: %s\n", rep.Reactors)
	pkg := ""
	for _, c := range rep.Cases {
		if c.Pkg != pkg {
			pkg = c.Pkg
			fmt.Fprintf(w, "pkg: %s\n", pkg)
		}
		runs := 0
		for _, im := range c.Impls {
			runs = max(runs, len(im.Runs))
		}
		for i := range runs {
			for _, im := range c.Impls {
				if i >= len(im.Runs) || im.Runs[i].Err != "" {
					continue
				}
				r := im.Runs[i]
				var b strings.Builder
				fmt.Fprintf(&b, "%s-%d\t%d\t%s ns/op", im.Bench, rep.GOMAXPROCS, r.N, num(r.NsPerUnit))
				if r.Mem {
					fmt.Fprintf(&b, "\t%s B/op\t%s allocs/op", num(r.BytesPerOp), num(r.AllocsPerOp))
				}
				for _, k := range slices.Sorted(maps.Keys(r.Metrics)) {
					fmt.Fprintf(&b, "\t%s %s", num(r.Metrics[k]), k)
				}
				fmt.Fprintln(w, b.String())
			}
		}
	}
	return nil
}

// num prints a value with up to 4 significant digits after the point,
// without an exponent (benchstat reads both, people prefer this).
func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1000 || v <= -1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 1 || v <= -1:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", v), "0"), ".")
}

// writeFiles saves rep under dir as <base>.txt (benchstat) and <base>.json.
func writeFiles(dir, base string, rep *report) (txt, js string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	txt = dir + "/" + base + ".txt"
	js = dir + "/" + base + ".json"
	var b strings.Builder
	writeBenchstat(&b, rep)
	if err := os.WriteFile(txt, []byte(b.String()), 0o644); err != nil {
		return "", "", err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(js, append(data, '\n'), 0o644); err != nil {
		return "", "", err
	}
	return txt, js, nil
}
