package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The servers of cmd/loadbench, ours first: stepsd placed by -pin, and
// with -pin also stepsd as `make run` starts it (neither pinned nor
// locked), since on shared CPUs the two differ most at low concurrency.
func serverList(o *options) []string {
	if o.pin {
		return []string{"stepsd", "stepsd-unpinned", "gnet", "net"}
	}
	return []string{"stepsd", "gnet", "net"}
}

// isOurServer reports whether a cmd/loadbench server is ours.
func isOurServer(s string) bool { return strings.HasPrefix(s, "stepsd") }

// serverSteps is how many progress steps the server suite takes: a cell
// per server, and two memory scenarios per server.
func serverSteps(o *options) int {
	cells := 6
	if o.quick {
		cells = 3
	}
	return (cells + 2) * len(serverList(o))
}

// loadCell mirrors the part of cmd/loadbench's JSON the table uses.
type loadCell struct {
	Server     string
	Pipeline   int
	Conns      int
	Requests   int64
	Errors     int64
	ReqPerSec  float64
	P50us      float64
	P99us      float64
	P999us     float64
	RSSPeakMiB float64
	// CPUPerReqUs is the server process's own CPU (utime+stime) per
	// request over the measured time.
	CPUPerReqUs float64
	Error       string
}

// rbCell mirrors one redis-benchmark run of cmd/loadbench's JSON.
type rbCell struct {
	Server   string
	Pipeline int
	Clients  int
	N        int
	Tests    []struct {
		Name                    string
		ReqPerSec, P50ms, P99ms float64
	}
	CPUPerReqUs float64
	Error       string
}

// runServer builds cmd/loadbench and runs it (its servers in child
// processes of their own, stepsd's reactors pinned with -pin), then turns
// its JSON report into one case per cell.
func runServer(o *options, root string, p *progress, rep *report) []*caseResult {
	tmp, err := os.MkdirTemp("", "benchtable-")
	if err != nil {
		return serverFail(err.Error(), rep)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "loadbench")
	p.show("server: building cmd/loadbench")
	build := exec.Command(goTool(), "build", "-o", bin, "./cmd/loadbench")
	build.Dir = filepath.Join(root, "bench")
	if out, err := build.CombinedOutput(); err != nil {
		return serverFail(fmt.Sprintf("building cmd/loadbench: %v: %s", err, out), rep)
	}
	jsonPath := filepath.Join(tmp, "load.json")
	servers := serverList(o)
	args := []string{"-json", jsonPath, "-loops", strconv.Itoa(o.cpus), "-pin=" + strconv.FormatBool(o.pin), "-servers", strings.Join(servers, ",")}
	if o.quick {
		args = append(args, "-quick")
	}
	if o.serverDur > 0 {
		args = append(args, "-duration", o.serverDur.String())
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(o.cpus))
	var stdout strings.Builder
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return serverFail(err.Error(), rep)
	}
	if err := cmd.Start(); err != nil {
		return serverFail(err.Error(), rep)
	}
	server := ""
	var logged []string
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		line := sc.Text()
		logged = append(logged, line)
		switch {
		case strings.HasSuffix(line, ": throughput matrix"):
			server = strings.TrimSuffix(line, ": throughput matrix")
			p.show("server: " + line)
		case strings.HasPrefix(line, "  pipeline="):
			p.step(fmt.Sprintf("server: %s %s", server, strings.Join(strings.Fields(line), " ")))
		case strings.HasSuffix(line, ": slow readers"), strings.HasSuffix(line, ": overload"):
			p.step("server: " + line)
		case strings.HasSuffix(line, ": redis-benchmark"):
			server = strings.TrimSuffix(line, ": redis-benchmark")
			p.show("server: " + line)
		case strings.HasPrefix(line, "  -P "):
			p.show(fmt.Sprintf("server: %s redis-benchmark %s", server, strings.Join(strings.Fields(line), " ")))
		}
	}
	waitErr := cmd.Wait()
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		return serverFail(fmt.Sprintf("cmd/loadbench %s: %v: %s", strings.Join(args, " "), waitErr, tail(logged, 8)), rep)
	}
	rep.Server = data
	if waitErr != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("FAIL cmd/loadbench: %v: %s", waitErr, tail(logged, 8)))
	}
	if i := strings.Index(stdout.String(), "memory:"); i >= 0 {
		rep.ServerMemory = "server " + stdout.String()[i:]
	}
	var lr struct {
		Throughput     []loadCell
		RedisBenchmark []rbCell
		Notes          []string
	}
	if err := json.Unmarshal(data, &lr); err != nil {
		return serverFail("cmd/loadbench's JSON: "+err.Error(), rep)
	}
	for _, n := range lr.Notes {
		if strings.HasPrefix(n, "redis-benchmark") {
			rep.Notes = append(rep.Notes, "server: "+n) // the rows skipped, and why
		}
	}
	return append(serverCases(lr.Throughput, servers), redisBenchmarkCases(lr.RedisBenchmark)...)
}

// redisBenchmarkCases makes one case per redis-benchmark cell: stepsd
// (ours) beside gnet and redis-server. Time per unit is the inverse of the
// mean rate over the run's tests (SET, GET, PING_INLINE, PING_MBULK).
func redisBenchmarkCases(runs []rbCell) []*caseResult {
	var results []*caseResult
	find := map[string]*caseResult{}
	for _, run := range runs {
		name := fmt.Sprintf("%s/redis-benchmark/P=%d/c=%d", serverCase.name, run.Pipeline, run.Clients)
		cr := find[name]
		if cr == nil {
			c := serverCase
			c.name = name
			c.what = fmt.Sprintf("redis-benchmark -t set,get,ping -P %d -c %d", run.Pipeline, run.Clients)
			c.impls = nil
			for _, r := range runs {
				if r.Pipeline == run.Pipeline && r.Clients == run.Clients {
					c.impls = append(c.impls, implSpec{name: r.Server, ours: isOurServer(r.Server)})
				}
			}
			cr = newCaseResult(c)
			find[name] = cr
			results = append(results, cr)
		}
		for _, im := range cr.Impls {
			if im.Impl != run.Server {
				continue
			}
			r := runResult{Metrics: map[string]float64{"server-CPU/req-µs": run.CPUPerReqUs}}
			var secs float64
			for _, t := range run.Tests {
				if t.ReqPerSec > 0 {
					secs += float64(run.N) / t.ReqPerSec
				}
				switch t.Name {
				case "SET", "GET":
					r.Metrics[t.Name+"-req/s"] = t.ReqPerSec
					r.Metrics[t.Name+"-p99-µs"] = t.P99ms * 1e3
				}
			}
			r.N = run.N * len(run.Tests)
			if secs > 0 {
				r.NsPerUnit = secs * 1e9 / float64(r.N)
			}
			switch {
			case run.Error != "":
				r.Err = run.Error
			case secs == 0:
				r.Err = "no rate"
			}
			im.Runs = append(im.Runs, r)
		}
	}
	return results
}

// serverCases makes one case per cell, in the order of the report: ours
// (stepsd) first, then gnet and net. Time per unit is the inverse of the
// throughput over all connections.
func serverCases(cells []loadCell, servers []string) []*caseResult {
	var results []*caseResult
	find := map[string]*caseResult{}
	for _, cell := range cells {
		name := fmt.Sprintf("%s/pipeline=%d/conns=%d", serverCase.name, cell.Pipeline, cell.Conns)
		cr := find[name]
		if cr == nil {
			c := serverCase
			c.name = name
			c.what = fmt.Sprintf("%d connections, each %d requests per write", cell.Conns, cell.Pipeline)
			c.impls = nil
			for _, s := range servers {
				c.impls = append(c.impls, implSpec{name: s, ours: isOurServer(s)})
			}
			cr = newCaseResult(c)
			find[name] = cr
			results = append(results, cr)
		}
		for _, im := range cr.Impls {
			if im.Impl != cell.Server {
				continue
			}
			r := runResult{N: int(cell.Requests), Metrics: map[string]float64{
				"req/s": cell.ReqPerSec, "p50-µs": cell.P50us, "p99-µs": cell.P99us, "p99.9-µs": cell.P999us, "peak-RSS-MiB": cell.RSSPeakMiB,
				"server-CPU/req-µs": cell.CPUPerReqUs,
			}}
			if cell.ReqPerSec > 0 {
				r.NsPerUnit = 1e9 / cell.ReqPerSec
			}
			switch {
			case cell.Error != "":
				r.Err = cell.Error
			case cell.Errors > 0:
				r.Err = fmt.Sprintf("%d wrong replies", cell.Errors)
			case cell.ReqPerSec <= 0:
				r.Err = "no reply"
			}
			im.Runs = append(im.Runs, r)
		}
	}
	// A server that did not run has no runs; drop its rows rather than
	// print empty ones (cmd/loadbench's notes say why).
	for _, cr := range results {
		var keep []*implResult
		for _, im := range cr.Impls {
			if len(im.Runs) > 0 {
				keep = append(keep, im)
			}
		}
		cr.Impls = keep
	}
	return results
}

func serverFail(msg string, rep *report) []*caseResult {
	c := serverCase
	c.impls = []implSpec{{name: "stepsd", ours: true}}
	return failAll([]*caseResult{newCaseResult(c)}, "server: "+msg, rep)
}
