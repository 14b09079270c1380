//go:build linux

package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/stepsd"
	"github.com/redis/go-redis/v9"
)

// startStepsd runs a stepsd on a loopback port for the test's length.
func startStepsd(t *testing.T, cfg stepsd.Config) *stepsd.Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.Reactors == 0 {
		cfg.Reactors = 2
	}
	s, err := stepsd.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(2 * time.Second); err != nil {
			t.Error(err)
		}
	})
	return s
}

// client is a go-redis client of addr, closed with the test. It connects
// as go-redis does by default: HELLO 3 (refused: it goes on in RESP2),
// then CLIENT SETINFO.
func client(t *testing.T, addr string, tweak func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: addr, MaxRetries: -1}
	if tweak != nil {
		tweak(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestGoRedisCommands(t *testing.T) {
	s := startStepsd(t, stepsd.Config{})
	c := client(t, s.Addr().String(), nil)
	ctx := ctx(t)
	if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING: %q, %v", got, err)
	}
	if err := c.Set(ctx, "k", "a value\r\nwith a line break", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "a value\r\nwith a line break" {
		t.Fatalf("GET: %q, %v", got, err)
	}
	if _, err := c.Get(ctx, "missing").Result(); err != redis.Nil {
		t.Fatalf("GET of a missing key: %v, want redis.Nil", err)
	}
	if err := c.Set(ctx, "k2", "", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Del(ctx, "k", "k2", "k3").Result(); err != nil || n != 2 {
		t.Fatalf("DEL: %d, %v", n, err)
	}
	if got, err := c.Echo(ctx, "hi").Result(); err != nil || got != "hi" {
		t.Fatalf("ECHO: %q, %v", got, err)
	}
	if got, err := c.Do(ctx, "SLEEP", 10).Result(); err != nil || got != "OK" {
		t.Fatalf("SLEEP: %v, %v", got, err)
	}
	err := c.Do(ctx, "NOSUCH", "x").Err()
	var rerr redis.Error
	if !errors.As(err, &rerr) || !strings.HasPrefix(err.Error(), "ERR unknown command") {
		t.Fatalf("unknown command: %v", err)
	}
	// Options we do not have are a syntax error, as in Redis without them.
	if err := c.Set(ctx, "k", "v", time.Minute).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR syntax error") {
		t.Fatalf("SET with EX: %v", err)
	}
	// A DB other than 0 is refused; the client's connection goes on.
	if err := c.Do(ctx, "SELECT", 1).Err(); err == nil || !strings.Contains(err.Error(), "DB index is out of range") {
		t.Fatalf("SELECT 1: %v", err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// COMMAND DOCS, which redis-cli asks for on connect to build its help,
	// decodes as a client reads it: each command stepsd has, by name.
	// Seven of stepsd's own, 31 of the value types'.
	all, err := c.Do(ctx, "COMMAND", "DOCS").Slice()
	if err != nil || len(all) != 2*38 {
		t.Fatalf("COMMAND DOCS: %d items, %v; want 38 commands, each a name and a doc", len(all), err)
	}
	if n, err := c.Do(ctx, "COMMAND", "COUNT").Int(); err != nil || n != 38 {
		t.Fatalf("COMMAND COUNT: %d, %v; want 38", n, err)
	}
	if docs, err := c.Do(ctx, "COMMAND", "DOCS", "zpopmin").Slice(); err != nil || len(docs) != 2 || docs[0] != "zpopmin" {
		t.Fatalf("COMMAND DOCS zpopmin: %v, %v", docs, err)
	}
	docs, err := c.Do(ctx, "COMMAND", "DOCS", "SLEEP").Slice()
	if err != nil || len(docs) != 2 || docs[0] != "sleep" {
		t.Fatalf("COMMAND DOCS SLEEP: %v, %v", docs, err)
	}
	if doc, ok := docs[1].([]any); !ok || len(doc) != 8 || doc[0] != "summary" {
		t.Fatalf("COMMAND DOCS SLEEP's doc: %#v", docs[1])
	}
}

func TestGoRedisPipeline(t *testing.T) {
	s := startStepsd(t, stepsd.Config{})
	c := client(t, s.Addr().String(), nil)
	ctx := ctx(t)
	const n = 500
	p := c.Pipeline()
	gets := make([]*redis.StringCmd, n)
	for i := 0; i < n; i++ {
		p.Set(ctx, fmt.Sprintf("p%d", i%50), i, 0)
		gets[i] = p.Get(ctx, fmt.Sprintf("p%d", i%50))
		if i%100 == 0 {
			p.Do(ctx, "SLEEP", 5) // replies behind it keep their order
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, g := range gets {
		if v, err := g.Int(); err != nil || v != i {
			t.Fatalf("GET %d in the pipeline: %d, %v", i, v, err)
		}
	}
}

func TestGoRedisConcurrentClients(t *testing.T) {
	s := startStepsd(t, stepsd.Config{})
	c := client(t, s.Addr().String(), func(o *redis.Options) { o.PoolSize = 16 })
	ctx := ctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				key := fmt.Sprintf("g%d", g)
				val := fmt.Sprintf("%d-%d", g, i)
				if err := c.Set(ctx, key, val, 0).Err(); err != nil {
					errs <- err
					return
				}
				if got, err := c.Get(ctx, key).Result(); err != nil || got != val {
					errs <- fmt.Errorf("goroutine %d: GET %q, %v; want %q", g, got, err, val)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A request over stepsd's Config.Timeout gets the FutoIn Timeout error as
// a Redis error; the connection goes on.
func TestGoRedisServerTimeout(t *testing.T) {
	s := startStepsd(t, stepsd.Config{Timeout: 50 * time.Millisecond})
	c := client(t, s.Addr().String(), func(o *redis.Options) { o.PoolSize = 1 })
	ctx := ctx(t)
	err := c.Do(ctx, "SLEEP", 2000).Err()
	var rerr redis.Error
	if !errors.As(err, &rerr) || !strings.HasPrefix(err.Error(), "Timeout") {
		t.Fatalf("SLEEP 2000 over a 50ms timeout: %v, want a Timeout error", err)
	}
	if got, err := c.Echo(ctx, "after").Result(); err != nil || got != "after" {
		t.Fatalf("ECHO after the timeout: %q, %v", got, err)
	}
}

// holdOnlySlot starts stepsd with one Limiter slot and a queue of queue,
// and a client whose SLEEP holds the slot until release: it returns a
// server, a second client connected before the slot was taken, the
// test's context, and release, which resets the sleeper's connection (SO_LINGER
// 0: the server cancels the SLEEP and gives the slot back at once) and
// returns when stepsd counts no holder. The slot is held by the server's
// own count, not by a time the test hopes its next command beats: a SLEEP
// of fixed length freed the slot before the refused command was read on
// a loaded machine.
func holdOnlySlot(t *testing.T, queue int) (s *stepsd.Server, other *redis.Client, _ context.Context, release func() error) {
	s = startStepsd(t, stepsd.Config{Concurrent: 1, Queue: queue})
	busy := client(t, s.Addr().String(), resetOnClose)
	other = client(t, s.Addr().String(), nil)
	ctx := ctx(t)
	if err := other.Ping(ctx).Err(); err != nil { // connected before the slot is taken
		t.Fatal(err)
	}
	go func() { _ = busy.Do(ctx, "SLEEP", 60000).Err() }() // ends with the reset
	waitFor(t, func() bool { return s.Metrics(ctx).Concurrency.Holders == 1 })
	return s, other, ctx, func() error {
		_ = busy.Close()
		return until(ctx, func() bool { return s.Metrics(ctx).Concurrency.Holders == 0 })
	}
}

// resetOnClose makes a client's connections end with a reset when closed.
func resetOnClose(o *redis.Options) {
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetLinger(0)
		}
		return c, err
	}
}

// until polls cond (a server counter) until it holds or ctx ends; unlike
// waitFor it may run on any goroutine.
func until(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// The Limiter's refusals are Redis errors with the FutoIn code
// DefenseRejected.
func TestGoRedisLimiterRejects(t *testing.T) {
	_, other, ctx, release := holdOnlySlot(t, 0)
	err := other.Echo(ctx, "x").Err()
	var rerr redis.Error
	if !errors.As(err, &rerr) || !strings.HasPrefix(err.Error(), "DefenseRejected") {
		t.Fatalf("with the only slot held: %v, want DefenseRejected", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if got, err := other.Echo(ctx, "y").Result(); err != nil || got != "y" {
		t.Fatalf("after the slot is free: %q, %v", got, err)
	}
}

// A client that gives up on a reply (its read timeout) drops the
// connection, here with a reset (SO_LINGER 0); the server cancels the
// request and gives its Limiter slot back at once, and the client's next
// command, on a new connection, works. (A plain close, a FIN, reads as a
// half-close: the requests already read are answered, then the
// connection closes.)
func TestGoRedisConnectionReset(t *testing.T) {
	s := startStepsd(t, stepsd.Config{Concurrent: 1, Queue: 0})
	c := client(t, s.Addr().String(), func(o *redis.Options) {
		o.ReadTimeout = 100 * time.Millisecond
		o.PoolSize = 1
		resetOnClose(o)
	})
	ctx := ctx(t)
	err := c.Do(ctx, "SLEEP", 3000).Err()
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("SLEEP 3000 with a 100ms read timeout: %v", err)
	}
	// The slot comes back long before the SLEEP would have ended.
	begin := time.Now()
	waitFor(t, func() bool { m := s.Metrics(ctx); return m.Concurrency.Holders == 0 })
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("the slot came back after %v", d)
	}
	if got, err := c.Echo(ctx, "again").Result(); err != nil || got != "again" {
		t.Fatalf("ECHO after the reset: %q, %v", got, err)
	}
	if n := s.Conns(); n != 1 {
		t.Errorf("%d connections open, want 1 (the dropped one closed)", n)
	}
}

// waitFor polls cond for up to 5s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A pipeline under overload is shed request by request, as separate
// commands are: with the only slot held and a queue of one, the first
// command of a pipeline waits in the queue and is served, the ones behind
// it are refused with DefenseRejected at once, each with its own error
// (stepsd runs a read's requests as one flow, and splits it where one
// waits).
func TestGoRedisPipelineShedPerCommand(t *testing.T) {
	s, other, ctx, release := holdOnlySlot(t, 1)
	// The slot is given back once the pipeline's first command waits in
	// the queue, so that it is served; the ones behind it were refused
	// when they were read.
	freed := make(chan error, 1)
	go func() {
		if err := until(ctx, func() bool { return s.Metrics(ctx).Concurrency.Queued == 1 }); err != nil {
			freed <- err
			return
		}
		freed <- release()
	}()
	p := other.Pipeline()
	first := p.Echo(ctx, "first")
	second := p.Echo(ctx, "second")
	third := p.Set(ctx, "k", "v", 0)
	_, _ = p.Exec(ctx)
	if got, err := first.Result(); err != nil || got != "first" {
		t.Errorf("queued first command: %q, %v; want first", got, err)
	}
	for _, err := range []error{second.Err(), third.Err()} {
		if err == nil || !strings.HasPrefix(err.Error(), "DefenseRejected") {
			t.Errorf("command behind the queued one: %v, want DefenseRejected", err)
		}
	}
	if err := <-freed; err != nil {
		t.Fatal(err)
	}
	if err := other.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET of the refused SET's key: %v, want nil", err)
	}
}
