//go:build linux

package redistest

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/asyncsteps/asyncsteps/stepsd"
	"github.com/redis/go-redis/v9"
)

// wrongType is the error go-redis returns for Redis's WRONGTYPE reply.
const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// TestGoRedisTypes drives stepsd's value types with go-redis's own
// commands: each type's commands, their replies as go-redis decodes them,
// WRONGTYPE, an emptied key gone, and the same through a pipeline.
func TestGoRedisTypes(t *testing.T) {
	s := startStepsd(t, stepsd.Config{})
	c := client(t, s.Addr().String(), nil)
	ctx := ctx(t)
	check := func(what string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !equal(got, want) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
	// strings
	n, err := c.Incr(ctx, "n").Result()
	check("INCR", n, int64(1), err)
	n, err = c.IncrBy(ctx, "n", 41).Result()
	check("INCRBY", n, int64(42), err)
	n, err = c.DecrBy(ctx, "n", 50).Result()
	check("DECRBY", n, int64(-8), err)
	n, err = c.Decr(ctx, "n").Result()
	check("DECR", n, int64(-9), err)
	check("MSET", c.MSet(ctx, "a", "1", "b", "2").Val(), "OK", c.MSet(ctx, "a", "1", "b", "2").Err())
	vals, err := c.MGet(ctx, "a", "b", "none").Result()
	check("MGET", vals, []any{"1", "2", nil}, err)
	if err := c.Set(ctx, "max", math.MaxInt64, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Incr(ctx, "max").Err(); err == nil || err.Error() != "ERR increment or decrement would overflow" {
		t.Fatalf("INCR past the maximum: %v", err)
	}
	// lists
	n, err = c.RPush(ctx, "l", "a", "b", "c").Result()
	check("RPUSH", n, int64(3), err)
	n, err = c.LPush(ctx, "l", "z").Result()
	check("LPUSH", n, int64(4), err)
	strs, err := c.LRange(ctx, "l", 0, -1).Result()
	check("LRANGE", strs, []string{"z", "a", "b", "c"}, err)
	strs, err = c.LRange(ctx, "l", -2, -1).Result()
	check("LRANGE negative", strs, []string{"b", "c"}, err)
	n, err = c.LLen(ctx, "l").Result()
	check("LLEN", n, int64(4), err)
	str, err := c.LPop(ctx, "l").Result()
	check("LPOP", str, "z", err)
	str, err = c.RPop(ctx, "l").Result()
	check("RPOP", str, "c", err)
	strs, err = c.LPopCount(ctx, "l", 5).Result()
	check("LPOP count", strs, []string{"a", "b"}, err)
	if err := c.LPop(ctx, "l").Err(); err != redis.Nil {
		t.Fatalf("LPOP of an emptied list: %v, want redis.Nil", err)
	}
	check("TYPE of an emptied list", c.Type(ctx, "l").Val(), "none", c.Type(ctx, "l").Err())
	// sets
	n, err = c.SAdd(ctx, "s", "a", "b", "c", "a").Result()
	check("SADD", n, int64(3), err)
	ok, err := c.SIsMember(ctx, "s", "b").Result()
	check("SISMEMBER", ok, true, err)
	n, err = c.SRem(ctx, "s", "b", "x").Result()
	check("SREM", n, int64(1), err)
	strs, err = c.SMembers(ctx, "s").Result()
	slices.Sort(strs)
	check("SMEMBERS", strs, []string{"a", "c"}, err)
	str, err = c.SPop(ctx, "s").Result()
	check("SPOP", str == "a" || str == "c", true, err)
	strs, err = c.SPopN(ctx, "s", 3).Result()
	check("SPOP count", len(strs), 1, err)
	n, err = c.SCard(ctx, "s").Result()
	check("SCARD of an emptied set", n, int64(0), err)
	// hashes
	n, err = c.HSet(ctx, "h", "f1", "v1", "f2", "v2").Result()
	check("HSET", n, int64(2), err)
	str, err = c.HGet(ctx, "h", "f2").Result()
	check("HGET", str, "v2", err)
	m, err := c.HGetAll(ctx, "h").Result()
	check("HGETALL", m, map[string]string{"f1": "v1", "f2": "v2"}, err)
	n, err = c.HLen(ctx, "h").Result()
	check("HLEN", n, int64(2), err)
	n, err = c.HDel(ctx, "h", "f1", "f2").Result()
	check("HDEL", n, int64(2), err)
	check("TYPE of an emptied hash", c.Type(ctx, "h").Val(), "none", nil)
	// sorted sets
	n, err = c.ZAdd(ctx, "z", redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 1, Member: "c"}, redis.Z{Score: 1, Member: "a"}).Result()
	check("ZADD", n, int64(3), err)
	strs, err = c.ZRange(ctx, "z", 0, -1).Result()
	check("ZRANGE", strs, []string{"a", "c", "b"}, err)
	n, err = c.ZAdd(ctx, "z", redis.Z{Score: 0.5, Member: "b"}).Result()
	check("ZADD update", n, int64(0), err)
	zs, err := c.ZRangeWithScores(ctx, "z", 0, -1).Result()
	check("ZRANGE WITHSCORES", zs, []redis.Z{{Score: 0.5, Member: "b"}, {Score: 1, Member: "a"}, {Score: 1, Member: "c"}}, err)
	f, err := c.ZScore(ctx, "z", "c").Result()
	check("ZSCORE", f, 1.0, err)
	n, err = c.ZCard(ctx, "z").Result()
	check("ZCARD", n, int64(3), err)
	zs, err = c.ZPopMin(ctx, "z", 2).Result()
	check("ZPOPMIN", zs, []redis.Z{{Score: 0.5, Member: "b"}, {Score: 1, Member: "a"}}, err)
	zs, err = c.ZPopMin(ctx, "z").Result()
	check("ZPOPMIN the last", zs, []redis.Z{{Score: 1, Member: "c"}}, err)
	check("TYPE of an emptied sorted set", c.Type(ctx, "z").Val(), "none", nil)
	// streams
	id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "x", ID: "*", Values: []string{"f", "v"}}).Result()
	if err != nil || !strings.Contains(id, "-") {
		t.Fatalf("XADD *: %q, %v", id, err)
	}
	id2, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "x", ID: "*", Values: map[string]any{"g": "w"}}).Result()
	if err != nil || id2 <= id && len(id2) == len(id) {
		t.Fatalf("second XADD *: %q after %q, %v", id2, id, err)
	}
	n, err = c.XLen(ctx, "x").Result()
	check("XLEN", n, int64(2), err)
	check("TYPE", c.Type(ctx, "x").Val(), "stream", nil)
	// WRONGTYPE, as go-redis sees it
	for what, err := range map[string]error{
		"GET of a stream":   c.Get(ctx, "x").Err(),
		"LPUSH on a string": c.LPush(ctx, "a", "v").Err(),
		"SADD on a stream":  c.SAdd(ctx, "x", "v").Err(),
		"INCR of a stream":  c.Incr(ctx, "x").Err(),
	} {
		if err == nil || err.Error() != wrongType {
			t.Errorf("%s: %v, want %q", what, err, wrongType)
		}
	}
	n, err = c.Del(ctx, "x", "a", "n").Result()
	check("DEL of a stream and strings", n, int64(3), err)
	// A pipeline of them: replies in order.
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, "pl", "1", "2")
		p.Incr(ctx, "pn")
		p.LPop(ctx, "pl")
		p.SAdd(ctx, "pl", "x") // WRONGTYPE: the others are still answered
		p.HSet(ctx, "ph", "f", "v")
		p.LRange(ctx, "pl", 0, -1)
		return nil
	})
	if err == nil || err.Error() != wrongType {
		t.Fatalf("pipeline: %v, want its WRONGTYPE", err)
	}
	if got := cmds[2].(*redis.StringCmd).Val(); got != "1" {
		t.Errorf("pipelined LPOP: %q", got)
	}
	if got := cmds[5].(*redis.StringSliceCmd).Val(); !slices.Equal(got, []string{"2"}) {
		t.Errorf("pipelined LRANGE: %q", got)
	}
}

// TestGoRedisIncrIsAtomic: INCRs from concurrent clients, over two
// reactors, each applied once (under the key's stripe lock).
func TestGoRedisIncrIsAtomic(t *testing.T) {
	s := startStepsd(t, stepsd.Config{})
	ctx := ctx(t)
	const clients, each = 8, 250
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		c := client(t, s.Addr().String(), nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := c.Incr(ctx, "counter").Err(); err != nil {
					errs <- err
					return
				}
				if err := c.RPush(ctx, "list", "x").Err(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := client(t, s.Addr().String(), nil)
	if n, err := c.Get(ctx, "counter").Int(); err != nil || n != clients*each {
		t.Fatalf("counter %d, %v; want %d", n, err, clients*each)
	}
	if n, err := c.LLen(ctx, "list").Result(); err != nil || n != clients*each {
		t.Fatalf("LLEN %d, %v; want %d", n, err, clients*each)
	}
}

// equal compares the values the checks above decode.
func equal(a, b any) bool {
	switch a := a.(type) {
	case []string:
		return slices.Equal(a, b.([]string))
	case []any:
		return slices.Equal(a, b.([]any))
	case []redis.Z:
		return slices.Equal(a, b.([]redis.Z))
	case map[string]string:
		bm := b.(map[string]string)
		if len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if bm[k] != v {
				return false
			}
		}
		return true
	}
	return a == b
}

// TestRedisBenchmarkDefaultSuite runs plain redis-benchmark, without -t:
// its default suite, every test of which must run (redis-benchmark exits
// at the first error reply) and print its line. XADD, in the default
// suite of redis-benchmark 7.2 on, is also run as a command of its own,
// as those versions send it, whatever the installed version's suite.
func TestRedisBenchmarkDefaultSuite(t *testing.T) {
	rb := need(t, "redis-benchmark", "redis-tools")
	s := startStepsd(t, stepsd.Config{})
	h, p := hostPort(t, s.Addr().String())
	out := run(t, "", rb, "-h", h, "-p", p, "-n", "2000", "-q") // run fails the test on a nonzero exit
	got := benchmarkTests(out)
	for _, want := range []string{
		"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH",
		"LPOP", "RPOP", "SADD", "HSET", "SPOP", "ZADD", "ZPOPMIN",
		"LPUSH (needed to benchmark LRANGE)", "LRANGE_100", "LRANGE_300",
		"LRANGE_500", "LRANGE_600", "MSET",
	} {
		if !got[want] {
			t.Errorf("redis-benchmark printed no line for %s:\n%s", want, out)
		}
	}
	out = run(t, "", rb, "-h", h, "-p", p, "-n", "2000", "-q", "XADD", "mystream", "*", "myfield", "myvalue")
	if !strings.Contains(out, "XADD") || !strings.Contains(out, "requests per second") {
		t.Errorf("redis-benchmark XADD:\n%s", out)
	}
	c := client(t, s.Addr().String(), nil)
	if n, err := c.XLen(ctx(t), "mystream").Result(); err != nil || n != 2000 {
		t.Errorf("XLEN mystream after redis-benchmark's 2000 XADDs: %d, %v", n, err)
	}
}

// benchmarkTests is the set of tests a redis-benchmark -q output has a
// result line for ("NAME: <rate> requests per second..."), each named
// up to its " (" comment ("LRANGE_100 (first 100 elements)" is
// LRANGE_100) but the LPUSH that fills LRANGE's list, kept whole.
func benchmarkTests(out string) map[string]bool {
	tests := map[string]bool{}
	for _, line := range strings.FieldsFunc(out, func(r rune) bool { return r == '\r' || r == '\n' }) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok || !strings.Contains(rest, "requests per second") {
			continue
		}
		if i := strings.Index(name, " ("); i > 0 && !strings.HasPrefix(name, "LPUSH (") {
			name = name[:i]
		}
		tests[name] = true
	}
	return tests
}
