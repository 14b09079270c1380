//go:build linux

package stepsd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// memChildEnv makes the test binary, started again by
// TestMemoryReturnsAfterBurst, run the server instead of the tests.
const memChildEnv = "STEPSD_MEMORY_CHILD"

// TestMemoryReturnsAfterBurst: 20,000 SLEEPs in flight,
// then nothing; within 10 s of the last reply the server's RSS is within
// 2x of what it was before the burst, with no GC forced by anyone but the
// server. The server runs in a child process (this test binary, started
// again), so its RSS and heap are its own and not the clients'.
func TestMemoryReturnsAfterBurst(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory is not the server's")
	}
	if testing.Short() {
		t.Skip("a 20,000-request burst")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), memChildEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close() // the child shuts down at EOF
		if err := cmd.Wait(); err != nil {
			t.Errorf("server child: %v", err)
		}
	}()
	out := bufio.NewReader(stdout)
	addr, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("server child: %v", err)
	}
	addr = strings.TrimSpace(addr)
	sample := func() memSample {
		if _, err := io.WriteString(stdin, "m\n"); err != nil {
			t.Fatalf("server child: %v", err)
		}
		var m memSample
		line, err := out.ReadString('\n')
		if _, err2 := fmt.Sscan(line, &m.rss, &m.heap); err != nil || err2 != nil {
			t.Fatalf("server child: %q %v %v", line, err, err2)
		}
		return m
	}
	// A small warm-up first: the pools the server keeps in steady state
	// are part of its starting point.
	burstAt(t, addr, 8, 10, 10*time.Millisecond, sample)
	time.Sleep(200 * time.Millisecond)
	before := sample()
	during := burstAt(t, addr, 80, 250, 1500*time.Millisecond, sample)
	end := time.Now()
	// Sample until RSS is well inside the bound (1.5x), or for 10 s; the
	// bound is checked on the last sample. STEPSD_MEMORY_WATCH=5m keeps
	// sampling that long, to see that it stays down.
	watch, _ := time.ParseDuration(os.Getenv("STEPSD_MEMORY_WATCH"))
	var after []memSample
	var at time.Duration
	for {
		time.Sleep(500 * time.Millisecond)
		m := sample()
		after = append(after, m)
		at = time.Since(end)
		if watch > 0 {
			if at > watch {
				break
			}
			continue
		}
		if 2*m.rss <= 3*before.rss || at > 10*time.Second {
			break
		}
	}
	last := after[len(after)-1]
	t.Logf("server RSS / heap in use, KiB: before %v, during %v, after the burst (every 0.5 s) %v", before, during, after)
	if last.rss > 2*before.rss {
		t.Errorf("RSS %d KiB %v after the burst, want at most 2x %d KiB (heap in use %d KiB, before %d KiB)",
			last.rss, at.Round(time.Millisecond), before.rss, last.heap, before.heap)
	} else {
		t.Logf("RSS back to %d KiB (%.2fx) %v after the burst", last.rss, float64(last.rss)/float64(before.rss), at.Round(time.Millisecond))
	}
}

// TestMemoryChild is the server of TestMemoryReturnsAfterBurst: it prints
// its address, answers each line on stdin with its RSS and heap in use
// (KiB), and shuts down at EOF. It never forces a GC.
func TestMemoryChild(t *testing.T) {
	if os.Getenv(memChildEnv) == "" {
		t.Skip("the server of TestMemoryReturnsAfterBurst")
	}
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Reactors = 2
	cfg.Timeout = 30 * time.Second
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(s.Addr().String())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms) // stops the world briefly; no GC
		fmt.Println(rssKiB(), ms.HeapInuse>>10)
	}
	if p := os.Getenv("STEPSD_BURST_PROF"); p != "" {
		// A heap profile of what the burst left (after a GC, which the
		// profile needs; the measurement is over).
		runtime.GC()
		f, err := os.Create(p)
		if err == nil {
			err = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
		if err != nil {
			t.Error(err)
		}
	}
	if err := s.Shutdown(2 * time.Second); err != nil {
		t.Error(err)
	}
}
