//go:build linux

package stepsd

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// soakSample is one row of the soak's series.
type soakSample struct {
	at                         time.Duration
	heapKiB, rssKiB            int
	goroutines, fds            int
	frames, flows, roots, conn int
	requests, flowsRun         int64
}

func fdCount() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// engineOccupancy sums the engine's live counters over rs, asked on each loop.
func engineOccupancy(rs []*reactor.Reactor) (frames, flows, roots int) {
	for _, r := range rs {
		ch := make(chan engine.Stats, 1)
		if r.Immediate(func() { ch <- engine.StatsOf(r) }).IsZero() {
			continue
		}
		st := <-ch
		frames += st.FramesLive
		flows += st.FlowsLive
		roots += st.RootsLive
	}
	return
}

// TestSoak runs the server under a mixed load (pipelined commands, SLEEPs,
// clients that reset, slow clients, idle ones) beside mixed flows on other
// reactors (parallel branches, timeouts, cancels, a shared Mutex,
// fire-and-forget roots), samples heap, RSS, goroutines, descriptors and
// engine occupancy every few seconds, prints the series, and fails if any
// grows. make soak runs it (STEPSD_SOAK=duration); make test does not.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("STEPSD_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set STEPSD_SOAK=duration (make soak) to run")
	}
	every := max(d/12, 2*time.Second)
	// The runtime's netpoller opens its two descriptors on the first
	// net.Dial of the process: open them before leakcheck counts.
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		_ = l.Close()
	}
	s := start(t, Config{Timeout: time.Second, ReadTimeout: 2 * time.Second, IdleTimeout: 5 * time.Second})
	g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var requests, flowsRun atomic.Int64

	// Server clients.
	client := func(seed uint64) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 1))
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				continue
			}
			br := bufio.NewReader(c)
			mode := rng.IntN(10)
			n := 1 + rng.IntN(50)
			var b strings.Builder
			for i := 0; i < n; i++ {
				switch rng.IntN(4) {
				case 0:
					fmt.Fprintf(&b, "SET k%d v%d\n", rng.IntN(1000), i)
				case 1:
					fmt.Fprintf(&b, "GET k%d\n", rng.IntN(1000))
				case 2:
					fmt.Fprintf(&b, "ECHO %d\n", i)
				default:
					fmt.Fprintf(&b, "SLEEP %d\n", rng.IntN(30))
				}
			}
			_, _ = io.WriteString(c, b.String())
			switch mode {
			case 0: // reset with requests in flight
				_ = c.(*net.TCPConn).SetLinger(0)
			case 1: // half-close, then read everything
				_ = c.(*net.TCPConn).CloseWrite()
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, _ = io.Copy(io.Discard, br)
			default:
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				for i := 0; i < n; i++ {
					if _, err := skipReply(br); err != nil {
						break
					}
					requests.Add(1)
				}
			}
			_ = c.Close()
		}
	}
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go client(uint64(i))
	}

	// Mixed flows beside the server.
	m := syncprim.NewMutex(2, syncprim.Unlimited)
	flows := func(seed uint64) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			r := g.Reactors()[rng.IntN(2)]
			root := engine.New(r)
			p := root.Parallel(func(as *engine.Steps, code string) { as.Success() })
			for b := 0; b < 1+rng.IntN(3); b++ {
				delay := time.Duration(rng.IntN(5)) * time.Millisecond
				fail := rng.IntN(5) == 0
				p.Add(func(as *engine.Steps) {
					as.SetTimeout(3 * time.Millisecond)
					as.SetCancel(func(*engine.Steps) {})
					x := as.External()
					r.Deferred(delay, func() {
						if fail {
							x.Error("E")
						} else {
							x.Success()
						}
					})
				})
			}
			root.Sync(m, func(as *engine.Steps) {
				as.Repeat(3, func(as *engine.Steps, i int) {
					if i == 2 {
						as.Break()
					}
				})
			}, nil)
			root.Add(func(as *engine.Steps) { flowsRun.Add(1) })
			if rng.IntN(2) == 0 {
				root.Execute()
				if rng.IntN(4) == 0 {
					root.Cancel()
				}
				root.ReleaseAtEnd()
			} else {
				pr := root.Promise()
				<-pr.Done()
				root.Release()
			}
		}
	}
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go flows(uint64(i))
	}

	var series []soakSample
	began := time.Now()
	sample := func() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fr, fl, ro := engineOccupancy(append(append([]*reactor.Reactor(nil), s.g.Reactors()...), g.Reactors()...))
		series = append(series, soakSample{
			at: time.Since(began).Round(time.Second), heapKiB: int(ms.HeapInuse >> 10), rssKiB: rssKiB(),
			goroutines: runtime.NumGoroutine(), fds: fdCount(),
			frames: fr, flows: fl, roots: ro, conn: s.Conns(),
			requests: requests.Load(), flowsRun: flowsRun.Load(),
		})
	}
	for time.Since(began) < d {
		time.Sleep(every)
		sample()
	}
	close(stop)
	wg.Wait()
	t.Logf("%8s %9s %9s %6s %5s %7s %6s %6s %5s %10s %10s", "t", "heap KiB", "RSS KiB", "gorout", "fds", "frames", "flows", "roots", "conns", "requests", "flows run")
	for _, x := range series {
		t.Logf("%8v %9d %9d %6d %5d %7d %6d %6d %5d %10d %10d", x.at, x.heapKiB, x.rssKiB, x.goroutines, x.fds, x.frames, x.flows, x.roots, x.conn, x.requests, x.flowsRun)
	}
	if len(series) < 6 {
		t.Fatalf("only %d samples: run longer", len(series))
	}
	// Growth: the last third's peak against the second third's peak (the
	// first third is warm-up), with slack for noise.
	third := len(series) / 3
	peak := func(xs []soakSample, f func(soakSample) int) int {
		m := 0
		for _, x := range xs {
			m = max(m, f(x))
		}
		return m
	}
	checks := []struct {
		name  string
		f     func(soakSample) int
		slack func(int) int
	}{
		{"heap", func(x soakSample) int { return x.heapKiB }, func(v int) int { return v/4 + 2048 }},
		{"RSS", func(x soakSample) int { return x.rssKiB }, func(v int) int { return v/4 + 4096 }},
		{"goroutines", func(x soakSample) int { return x.goroutines }, func(v int) int { return 16 }},
		{"fds", func(x soakSample) int { return x.fds }, func(v int) int { return 16 }},
		{"frames", func(x soakSample) int { return x.frames }, func(v int) int { return v/2 + 256 }},
		{"roots", func(x soakSample) int { return x.roots }, func(v int) int { return v/2 + 64 }},
	}
	for _, c := range checks {
		mid, last := peak(series[third:2*third], c.f), peak(series[2*third:], c.f)
		if last > mid+c.slack(mid) {
			t.Errorf("%s grows: peak %d in the middle third, %d in the last", c.name, mid, last)
		}
	}
	if series[len(series)-1].requests == series[third].requests || series[len(series)-1].flowsRun == series[third].flowsRun {
		t.Error("the load stopped making progress")
	}
}
