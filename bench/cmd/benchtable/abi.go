package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// runABI runs the abi cases as `go test -bench` of the main module's abi
// package in a child process (it needs cgo, and its C fixtures are in its
// test files) and parses the benchmark lines as they come.
func runABI(o *options, root string, cases []caseSpec, p *progress, rep *report) []*caseResult {
	var results []*caseResult
	byBench := map[string]*implResult{}
	var names []string
	for _, c := range cases {
		cr := newCaseResult(c)
		results = append(results, cr)
		names = append(names, c.name)
		for _, im := range cr.Impls {
			byBench[im.Bench] = im
		}
	}
	args := []string{"test", "-run", "^$", "-bench", "^Benchmark(" + strings.Join(names, "|") + ")$",
		"-benchmem", "-count", strconv.Itoa(o.count), "-benchtime", o.duration, "./abi"}
	p.show("abi: go " + strings.Join(args, " ") + " (building the cgo test binary)")
	cmd := exec.Command(goTool(), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(o.cpus))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return failAll(results, err.Error(), rep)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return failAll(results, err.Error(), rep)
	}
	var other []string // lines that are not results: a failure's story
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		name, r, ok := parseBenchLine(line)
		if !ok {
			if !isBenchHeader(line) {
				other = append(other, line)
			}
			continue
		}
		im := byBench[name]
		if im == nil {
			continue // a sub-benchmark the table does not list
		}
		im.Runs = append(im.Runs, r)
		p.step("abi: " + strings.TrimPrefix(name, "Benchmark"))
	}
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		msg := fmt.Sprintf("go test ./abi: %v: %s", err, tail(append(other, strings.Split(stderr.String(), "\n")...), 8))
		return failAll(results, msg, rep)
	}
	return results
}

// goTool is the go command for the children: GOROOT/bin/go when the go
// command that started `go run` set GOROOT, else the one on PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if g := filepath.Join(root, "bin", "go"); fileExists(g) {
			return g
		}
	}
	return "go"
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// failAll marks every implementation that has no run as failed with msg.
func failAll(results []*caseResult, msg string, rep *report) []*caseResult {
	rep.Notes = append(rep.Notes, "FAIL "+msg)
	for _, c := range results {
		for _, im := range c.Impls {
			if len(im.Runs) == 0 {
				im.Runs = append(im.Runs, runResult{Err: msg})
			}
		}
	}
	return results
}

var cpuSuffix = regexp.MustCompile(`-\d+$`)

// parseBenchLine parses one result line of go test -bench:
// "BenchmarkCStep/impl=c-2  1000000  97.2 ns/op  0 B/op  0 allocs/op  ...".
// name has no -GOMAXPROCS suffix.
func parseBenchLine(line string) (name string, r runResult, ok bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
		return "", r, false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return "", r, false
	}
	r.N = n
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return "", r, false
		}
		switch unit := f[i+1]; unit {
		case "ns/op":
			r.NsPerUnit = v
		case "B/op":
			r.BytesPerOp, r.Mem = v, true
		case "allocs/op":
			r.AllocsPerOp, r.Mem = v, true
		default:
			if r.Metrics == nil {
				r.Metrics = map[string]float64{}
			}
			r.Metrics[unit] = v
		}
	}
	return cpuSuffix.ReplaceAllString(f[0], ""), r, true
}

// isBenchHeader reports whether line is part of go test's normal output
// around the results.
func isBenchHeader(line string) bool {
	for _, p := range []string{"goos:", "goarch:", "pkg:", "cpu:", "PASS", "ok "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return strings.TrimSpace(line) == ""
}

// tail is the last n non-empty lines, joined.
func tail(lines []string, n int) string {
	var keep []string
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, " | ")
}
