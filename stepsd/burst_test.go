//go:build linux

package stepsd

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"
)

// rssKiB reads the process's resident set from /proc/self/status.
func rssKiB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			var n int
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:")), "%d", &n)
			return n
		}
	}
	return -1
}

type memSample struct{ rss, heap int }

func sampleMem() memSample {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{rssKiB(), int(ms.HeapInuse >> 10)}
}

// burst puts conns*perConn SLEEP requests in flight at once, samples memory
// while they are, and waits for every reply.
func burst(t testing.TB, s *Server, conns, perConn int, sleep time.Duration) memSample {
	return burstAt(t, s.Addr().String(), conns, perConn, sleep, sampleMem)
}

// sleepRequest is the one place the burst tests write the protocol: a
// SLEEP of ms milliseconds.
func sleepRequest(w *bufio.Writer, ms int64) {
	fmt.Fprintf(w, "SLEEP %d\n", ms)
}

// burstAt is burst against the server at addr; sample is called while the
// requests are in flight.
func burstAt(t testing.TB, addr string, conns, perConn int, sleep time.Duration, sample func() memSample) memSample {
	var wg sync.WaitGroup
	ready := make(chan struct{}, conns)
	release := make(chan struct{})
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				ready <- struct{}{}
				return
			}
			defer c.Close()
			w := bufio.NewWriter(c)
			for j := 0; j < perConn; j++ {
				sleepRequest(w, sleep.Milliseconds())
			}
			_ = w.Flush()
			ready <- struct{}{}
			<-release
			br := bufio.NewReader(c)
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			for j := 0; j < perConn; j++ {
				if _, err := br.ReadString('\n'); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < conns; i++ {
		<-ready
	}
	time.Sleep(sleep / 2) // let the server read them all: they sleep for sleep
	during := sample()
	close(release)
	wg.Wait()
	return during
}

// TestBurstMemory shows RSS and heap before, during and after a burst of
// 20k requests in flight. Run with STEPSD_BURST=1.
func TestBurstMemory(t *testing.T) {
	if os.Getenv("STEPSD_BURST") == "" {
		t.Skip("set STEPSD_BURST=1 to measure")
	}
	s := start(t, Config{Timeout: 30 * time.Second, MaxPipeline: 256})
	runtime.GC()
	debug.FreeOSMemory()
	before := sampleMem()
	during := burst(t, s, 80, 250, 1500*time.Millisecond)
	var after []memSample
	for i := 0; i < 12; i++ {
		time.Sleep(500 * time.Millisecond)
		runtime.GC()
		debug.FreeOSMemory()
		after = append(after, sampleMem())
	}
	t.Logf("RSS KiB / heap in use KiB: before %v, during %v, after (every 0.5s) %v", before, during, after)
	if p := os.Getenv("STEPSD_BURST_PROF"); p != "" {
		f, _ := os.Create(p)
		_ = pprof.WriteHeapProfile(f)
		_ = f.Close()
	}
}

// After a burst, the request pool gives back what stayed
// unused for a trim period instead of keeping its peak forever.
//
// The burst's requests stay in flight until the test lets them go (their
// connections reset: the SLEEPs are canceled), not for a time: with
// SLEEPs of 300 ms, the first requests ended and were taken again before
// the server had read the last ones while the machine was loaded, so the
// pool never held the burst ("1399 requests pooled after a burst of
// 2000"). And the pool's peak is what it holds plus what its trims gave
// up (reqsTrimmed), which a trim that runs before the test looks cannot
// lower.
func TestRequestPoolShrinksAfterBurst(t *testing.T) {
	const conns, perConn = 10, 200
	s := start(t, Config{Timeout: 5 * time.Minute})
	cs := make([]*client, conns)
	for i := range cs {
		cs[i] = dial(t, s)
		cs[i].sendRaw(strings.Repeat("SLEEP 240000\r\n", perConn))
	}
	held := func() int { c, _ := s.limiterStats(); return c.Holders }
	waitFor(t, 20*time.Second, "the burst in flight", func() bool { return held() == conns*perConn })
	for _, c := range cs {
		_ = c.c.SetLinger(0) // close sends RST: the SLEEPs are canceled
		_ = c.c.Close()
	}
	waitFor(t, 20*time.Second, "the burst's slots back", func() bool { return held() == 0 })
	pool := func() (free, made int) {
		for _, sh := range s.shards {
			ch := make(chan [2]int)
			sh.r.Immediate(func() { ch <- [2]int{sh.freeN, sh.freeN + sh.reqsTrimmed} })
			x := <-ch
			free += x[0]
			made += x[1]
		}
		return free, made
	}
	free, made := pool()
	if made < conns*perConn {
		t.Fatalf("%d requests pooled or trimmed after a burst of %d in flight at once (%d pooled)", made, conns*perConn, free)
	}
	deadline := time.Now().Add(10 * time.Second)
	for free > 64 {
		if time.Now().After(deadline) {
			t.Fatalf("request pool still holds %d (%d made) after trims", free, made)
		}
		time.Sleep(100 * time.Millisecond) // the shards look once a second; no GC needed
		free, _ = pool()
	}
}
