//go:build linux

package stepsd

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/syncprim"
)

func TestShareAddsUp(t *testing.T) {
	for _, c := range []struct{ n, k int }{
		{65536, 1}, {65536, 3}, {65536, 16}, {1000, 7}, {7, 7}, {8, 3}, {100_000_000, 6},
	} {
		sum, lo, hi := 0, c.n, 0
		for i := 0; i < c.k; i++ {
			s := share(c.n, c.k, i)
			sum += s
			lo, hi = min(lo, s), max(hi, s)
		}
		if sum != c.n || hi-lo > 1 {
			t.Errorf("share(%d, %d, i): sum %d (want %d), spread %d..%d", c.n, c.k, sum, c.n, lo, hi)
		}
	}
	for _, n := range []int{0, syncprim.Unlimited, syncprim.NoQueue} {
		for i := 0; i < 3; i++ {
			if got := share(n, 3, i); got != n {
				t.Errorf("share(%d, 3, %d) = %d, want %d (not a count: every reactor's as it is)", n, i, got, n)
			}
		}
	}
}

func TestSplitLimiterRule(t *testing.T) {
	d := DefaultConfig()
	with := func(f func(*Config)) Config {
		c := d
		f(&c)
		return c.withDefaults()
	}
	for _, c := range []struct {
		name string
		cfg  Config
		want bool
	}{
		{"defaults, 1 reactor", with(func(c *Config) { c.Reactors = 1 }), false},
		{"defaults, 2 reactors", with(func(c *Config) { c.Reactors = 2 }), true},
		{"defaults, 8 reactors", with(func(c *Config) { c.Reactors = 8 }), true},
		{"defaults, 100 reactors", with(func(c *Config) { c.Reactors = 100 }), true},
		{"defaults, 101 reactors: rate share under 1M/s", with(func(c *Config) { c.Reactors = 101 }), false},
		{"SharedLimiter", with(func(c *Config) { c.Reactors = 8; c.SharedLimiter = true }), false},
		{"Concurrent share under MaxPipeline", with(func(c *Config) { c.Reactors = 2; c.Concurrent = 511 }), false},
		{"Concurrent share at MaxPipeline", with(func(c *Config) { c.Reactors = 2; c.Concurrent = 512 }), true},
		{"small MaxPipeline", with(func(c *Config) { c.Reactors = 2; c.Concurrent = 8; c.MaxPipeline = 4 }), true},
		{"Rate share under 1M/s", with(func(c *Config) { c.Reactors = 2; c.Rate = 1_999_999 }), false},
		{"Queue 0", with(func(c *Config) { c.Reactors = 4; c.Queue = 0 }), true},
		{"Queue unlimited", with(func(c *Config) { c.Reactors = 4; c.Queue = syncprim.Unlimited }), true},
		{"Queue under one per reactor", with(func(c *Config) { c.Reactors = 4; c.Queue = 3 }), false},
		{"Queue one per reactor", with(func(c *Config) { c.Reactors = 4; c.Queue = 4 }), true},
		{"Burst under one per reactor", with(func(c *Config) { c.Reactors = 4; c.Burst = 1 }), false},
	} {
		if got := splitLimiter(c.cfg); got != c.want {
			t.Errorf("%s: split %v, want %v", c.name, got, c.want)
		}
	}
}

// Start gives each shard its own Limiter where the rule says so, one shared
// Limiter otherwise, and Metrics says which.
func TestLimitersPerShard(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want int
	}{
		{Config{Reactors: 1}, 1},
		{Config{Reactors: 3}, 3},
		{Config{Reactors: 3, SharedLimiter: true}, 1},
		{Config{Reactors: 3, Concurrent: 10}, 1},
	} {
		s := start(t, c.cfg)
		if got := s.Metrics(t.Context()).Limiters; got != c.want {
			t.Errorf("%+v: Metrics.Limiters %d, want %d", c.cfg, got, c.want)
		}
		seen := map[*syncprim.Limiter]bool{}
		for _, sh := range s.shards {
			seen[sh.lim] = true
		}
		if len(seen) != c.want {
			t.Errorf("%+v: shards use %d Limiters, want %d", c.cfg, len(seen), c.want)
		}
	}
}

// Split, the shares add up to the server's bounds: two connections (one
// per reactor, round-robin) fill both shares with their full pipelines and
// nothing of theirs is refused; a third connection, on either reactor, is
// rejected: the server never holds more than Concurrent.
func TestSplitLimiterBoundsTheServer(t *testing.T) {
	const pipe = 4
	s := start(t, Config{Reactors: 2, Concurrent: 2 * pipe, Queue: 0, MaxPipeline: pipe, Timeout: 10 * time.Second})
	if n := len(s.lims); n != 2 {
		t.Fatalf("%d Limiters, want one per reactor", n)
	}
	a, b := dial(t, s), dial(t, s)
	sendN(a, pipe, "SLEEP", "5000")
	sendN(b, pipe, "SLEEP", "5000")
	waitFor(t, 2*time.Second, "both pipelines inside", func() bool {
		c, _ := s.limiterStats()
		return c.Holders == 2*pipe
	})
	if c, _ := s.limiterStats(); c.Rejected != 0 {
		t.Fatalf("full pipelines within their shares: %d rejected, want 0", c.Rejected)
	}
	for i := 0; i < 2; i++ {
		o := dial(t, s)
		if got := command(o, "ECHO", "x"); !rejected(got) {
			t.Fatalf("extra connection %d with every share full: %q, want DefenseRejected", i, got)
		}
	}
	if c, _ := s.limiterStats(); c.Rejected != 2 || c.Holders != 2*pipe {
		t.Fatalf("rejected %d, holders %d; want 2 and %d", c.Rejected, c.Holders, 2*pipe)
	}
	for _, c := range []*client{a, b} {
		_ = c.c.SetLinger(0) // RST: the sleeps are canceled, their slots come back
		_ = c.c.Close()
	}
	waitFor(t, 2*time.Second, "the slots back", func() bool {
		c, _ := s.limiterStats()
		return c.Holders == 0
	})
	if got := command(dial(t, s), "ECHO", "after"); got != "after" {
		t.Fatalf("after the resets: %q", got)
	}
}

// Split, a reactor whose share is full rejects although another reactor
// has room (Config, "The Limiter"): with one connection's full pipeline
// holding its reactor's share, of the connections that follow (spread
// over both reactors) those on its reactor are rejected and the others
// served.
func TestSplitLimiterShareIsPerReactor(t *testing.T) {
	const pipe = 4
	s := start(t, Config{Reactors: 2, Concurrent: 2 * pipe, Queue: 0, MaxPipeline: pipe, Timeout: 10 * time.Second})
	a := dial(t, s)
	sendN(a, pipe, "SLEEP", "5000")
	waitFor(t, 2*time.Second, "one share full", func() bool {
		c, _ := s.limiterStats()
		return c.Holders == pipe
	})
	served, refused := 0, 0
	for i := 0; i < 4; i++ {
		switch got := command(dial(t, s), "ECHO", "x"); {
		case got == "x":
			served++
		case rejected(got):
			refused++
		default:
			t.Fatalf("reply %q", got)
		}
	}
	if served == 0 || refused == 0 {
		t.Fatalf("%d served, %d refused; want both (the other reactor's share is free, this one's full)", served, refused)
	}
	_ = a.c.SetLinger(0)
	_ = a.c.Close()
}
