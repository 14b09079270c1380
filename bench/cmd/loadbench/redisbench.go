package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asyncsteps/asyncsteps/bench/internal/mdtable"
	"github.com/asyncsteps/asyncsteps/bench/netbench"
)

// This file runs redis-benchmark, the tool Redis users trust, against
// stepsd, the gnet peer and a real redis-server, each a process of its
// own whose CPU time is read from /proc like the matrix's.

// serverRedis is a real redis-server (Debian's redis-server package).
const serverRedis = "redis-server"

// rbCell is one redis-benchmark run: -P pipeline -c clients.
type rbCell struct{ pipeline, clients int }

// rbCells: -P 1 and 16 × -c 1, 16 and 256, and -c 50 -P 16, the shape of
// the target against redis-server (stepsd's req/s at least redis-server's;
// profiles/notes/2026-11-27-p99-round7.md).
var rbCells = []rbCell{{1, 1}, {1, 16}, {1, 256}, {16, 1}, {16, 16}, {16, 50}, {16, 256}}

// rbTests is redis-benchmark's -t.
const rbTests = "set,get,ping"

// rbPlan is what the redis-benchmark rows run: -rb-cells, -rb-tests,
// -rb-threads and -rb-n. The defaults are the full 2-core table; a machine
// with many cores needs redis-benchmark's own threads (--threads, Redis 6
// and later), or one load thread, not the servers, sets the figures.
type rbPlan struct {
	cells   []rbCell
	tests   string
	threads int // --threads; 0: redis-benchmark's single thread
	n       int // -n per test; 0: rbRequests
	quick   bool
	// warmup is -child-warmup: each server first serves the largest cell
	// (most clients, deepest pipeline) this long through loadbench's own
	// load, unmeasured, so that a fresh Go child's one-time costs (heap,
	// stacks, threads) are not in its first test, and redis-server gets
	// the same.
	warmup time.Duration
}

// parseRBCells reads -rb-cells: comma-separated PIPELINExCLIENTS, such as
// "16x50,1x256"; "" is every cell of rbCells.
func parseRBCells(v string) ([]rbCell, error) {
	if strings.TrimSpace(v) == "" {
		return rbCells, nil
	}
	var cells []rbCell
	for _, f := range strings.Split(v, ",") {
		ps, cs, ok := strings.Cut(strings.TrimSpace(f), "x")
		p, e1 := strconv.Atoi(ps)
		c, e2 := strconv.Atoi(cs)
		if !ok || e1 != nil || e2 != nil || p < 1 || c < 1 {
			return nil, fmt.Errorf("-rb-cells: %q is not PIPELINExCLIENTS (positive integers, such as 16x50)", f)
		}
		cells = append(cells, rbCell{p, c})
	}
	return cells, nil
}

// rbResult is one server's redis-benchmark run of one cell.
type rbResult struct {
	Server      string
	Pipeline    int
	Clients     int
	N           int // -n: requests of each test
	Tests       []rbTest
	CPUSec      float64 // the server's utime+stime over the whole run (every test)
	CPUPerReqUs float64 // CPUSec per request of all its tests
	Error       string  `json:",omitempty"`
}

// rbTest is one row of redis-benchmark's --csv output.
type rbTest struct {
	Name      string // SET, GET, PING_INLINE, PING_MBULK
	ReqPerSec float64
	P50ms     float64
	P99ms     float64
}

// rbRequests is -n for a cell: enough for a second or so per test on 2
// CPUs, a tenth with -quick.
func rbRequests(c rbCell, quick bool) int {
	n := 20_000
	if c.pipeline > 1 {
		n = 200_000
	}
	if quick {
		n /= 10
	}
	return n
}

// runRedisBenchmark runs every cell against each of servers that is
// stepsd, gnet or redis-server. Missing programs skip, with a note.
func runRedisBenchmark(rep *report, servers []string, loops int, rp rbPlan) {
	rb, err := exec.LookPath("redis-benchmark")
	if err != nil {
		rep.note("redis-benchmark rows skipped: redis-benchmark is not installed (Debian package redis-tools; make bench installs it with apt-get as root)")
		return
	}
	for _, server := range servers {
		fmt.Fprintf(os.Stderr, "%s: redis-benchmark\n", server)
		var (
			addr string
			pid  int
			stop func() error
		)
		switch baseServer(server) {
		case serverRedis:
			addr, pid, stop, err = startRedisServer()
		case serverStepsd, serverStepsdFree, serverStepsdShared, serverGnet:
			var ch *child
			if ch, err = startChild(server, loops); err == nil {
				addr, pid, stop = ch.addr, ch.cmd.Process.Pid, ch.stop
			}
		default:
			continue
		}
		if err != nil {
			rep.note("redis-benchmark %s: not run: %v", server, err)
			continue
		}
		if rp.warmup > 0 {
			var big rbCell
			for _, c := range rp.cells {
				big = rbCell{pipeline: max(big.pipeline, c.pipeline), clients: max(big.clients, c.clients)}
			}
			fmt.Fprintf(os.Stderr, "%s: redis-benchmark: -child-warmup %v at -P %d -c %d, unmeasured\n", server, rp.warmup, big.pipeline, big.clients)
			if _, err := netbench.RunLoad(netbench.LoadConfig{Addr: addr, Conns: big.clients, Pipeline: big.pipeline, Duration: rp.warmup}); err != nil {
				rep.failed = true
				rep.note("redis-benchmark %s: -child-warmup: %v", server, err)
			}
		}
		host, port, _ := net.SplitHostPort(addr)
		rep.RBTests, rep.RBThreads = rp.tests, rp.threads
		for _, c := range rp.cells {
			r := rbResult{Server: server, Pipeline: c.pipeline, Clients: c.clients, N: rp.n}
			if r.N == 0 {
				r.N = rbRequests(c, rp.quick)
			}
			args := []string{"-h", host, "-p", port, "-t", rp.tests, "-P", strconv.Itoa(c.pipeline),
				"-c", strconv.Itoa(c.clients), "-n", strconv.Itoa(r.N), "--csv"}
			if rp.threads > 0 {
				args = append(args, "--threads", strconv.Itoa(rp.threads))
			}
			cpu0, err0 := procCPU(pid)
			out, err := runCmd(rb, args...)
			cpu1, err1 := procCPU(pid)
			if err == nil {
				r.Tests, err = parseRBCSV(out)
			}
			if err != nil {
				r.Error = err.Error()
				rep.note("redis-benchmark %s -P %d -c %d: %v", server, c.pipeline, c.clients, err)
			} else if err0 == nil && err1 == nil && len(r.Tests) > 0 {
				r.CPUSec = (cpu1 - cpu0).Seconds()
				r.CPUPerReqUs = us(cpu1-cpu0) / float64(r.N*len(r.Tests))
			}
			rep.RedisBenchmark = append(rep.RedisBenchmark, r)
			fmt.Fprintf(os.Stderr, "  -P %-2d -c %-3d %s  server CPU %.2f µs/req\n", c.pipeline, c.clients, fmtRBTests(r.Tests), r.CPUPerReqUs)
		}
		if err := stop(); err != nil {
			rep.note("redis-benchmark %s: %v", server, err)
		}
	}
}

// runCmd runs a program (at most five minutes) and returns its stdout.
func runCmd(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// parseRBCSV reads redis-benchmark --csv: a header, then "test","rps",
// "avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",
// "p99_latency_ms","max_latency_ms" per test.
func parseRBCSV(out string) ([]rbTest, error) {
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("redis-benchmark --csv: %w: %q", err, out)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("redis-benchmark --csv: no rows: %q", out)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"test", "rps", "p50_latency_ms", "p99_latency_ms"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("redis-benchmark --csv: no column %q in %q", h, recs[0])
		}
	}
	var tests []rbTest
	for _, r := range recs[1:] {
		rps, e1 := strconv.ParseFloat(r[col["rps"]], 64)
		p50, e2 := strconv.ParseFloat(r[col["p50_latency_ms"]], 64)
		p99, e3 := strconv.ParseFloat(r[col["p99_latency_ms"]], 64)
		if err := errors.Join(e1, e2, e3); err != nil {
			return nil, fmt.Errorf("redis-benchmark --csv row %q: %w", r, err)
		}
		tests = append(tests, rbTest{Name: r[col["test"]], ReqPerSec: rps, P50ms: p50, P99ms: p99})
	}
	return tests, nil
}

func fmtRBTests(ts []rbTest) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, " %s %.0f/s", t.Name, t.ReqPerSec)
	}
	return b.String()
}

// startRedisServer starts redis-server on a free loopback port, without
// persistence, and waits until it answers.
func startRedisServer() (addr string, pid int, stop func() error, err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", 0, nil, errors.New("redis-server is not installed (Debian package redis-server; make bench installs it with apt-get as root)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", 0, nil, err
	}
	addr = l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--protected-mode", "no", "--logfile", "")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := startOn(cmd, cpus.server); err != nil {
		return "", 0, nil, err
	}
	go io.Copy(io.Discard, bufio.NewReader(stdout))
	stop = func() error {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
			return nil
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			return errors.New("redis-server did not stop within 5s")
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr, cmd.Process.Pid, stop, nil
		}
		if time.Now().After(deadline) {
			_ = stop()
			return "", 0, nil, fmt.Errorf("redis-server on %s: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// printRedisBenchmark prints the redis-benchmark table: per cell, each
// server's requests/s and p99 of SET, GET and PING_MBULK, and its CPU per
// request over the whole run, with the ratios to redis-server's.
func printRedisBenchmark(w io.Writer, rep *report) {
	if len(rep.RedisBenchmark) == 0 {
		return
	}
	threads := ""
	if rep.RBThreads > 0 {
		threads = fmt.Sprintf(" --threads %d", rep.RBThreads)
	}
	fmt.Fprintf(w, "redis-benchmark -t %s -P <pipeline> -c <clients> -n <n>%s --csv; CPU = the server process's utime+stime over the run, per request of all its tests\n\n", rep.RBTests, threads)
	cells := [][]string{{"server", "-P", "-c", "SET/s", "GET/s", "PING_MBULK/s", "SET p99", "GET p99", "CPU µs/req", "SET/s vs redis", "CPU vs redis"}}
	find := func(server string, c rbCell) (rbResult, bool) {
		for _, r := range rep.RedisBenchmark {
			if r.Server == server && r.Pipeline == c.pipeline && r.Clients == c.clients {
				return r, true
			}
		}
		return rbResult{}, false
	}
	test := func(r rbResult, name string) rbTest {
		for _, t := range r.Tests {
			if t.Name == name {
				return t
			}
		}
		return rbTest{}
	}
	var servers []string
	var order []rbCell // the cells in the order they ran
	for _, r := range rep.RedisBenchmark {
		if !contains(servers, r.Server) {
			servers = append(servers, r.Server)
		}
		if c := (rbCell{r.Pipeline, r.Clients}); !slices.Contains(order, c) {
			order = append(order, c)
		}
	}
	for _, c := range order {
		redis, hasRedis := find(serverRedis, c)
		for _, s := range servers {
			r, ok := find(s, c)
			if !ok {
				continue
			}
			set, get, ping := test(r, "SET"), test(r, "GET"), test(r, "PING_MBULK")
			row := []string{s, fmt.Sprint(c.pipeline), fmt.Sprint(c.clients),
				fmt.Sprintf("%.0f", set.ReqPerSec), fmt.Sprintf("%.0f", get.ReqPerSec), fmt.Sprintf("%.0f", ping.ReqPerSec),
				fmt.Sprintf("%.3fms", set.P99ms), fmt.Sprintf("%.3fms", get.P99ms), fmt.Sprintf("%.2f", r.CPUPerReqUs), "", ""}
			if r.Error != "" {
				row[3] = "FAIL"
			}
			if hasRedis {
				if rs := test(redis, "SET"); rs.ReqPerSec > 0 {
					row[9] = fmt.Sprintf("%.2fx", set.ReqPerSec/rs.ReqPerSec)
				}
				if redis.CPUPerReqUs > 0 {
					row[10] = fmt.Sprintf("%.2fx", r.CPUPerReqUs/redis.CPUPerReqUs)
				}
			}
			cells = append(cells, row)
		}
	}
	mdtable.Write(w, cells, 1, 10)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
