package netbench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

// Tests of the RESP servers, the peers (gnetpeer.go, netpeer.go) and
// stepsd alike, and of the load generator (load.go): every command's
// reply, the order of replies behind a SLEEP, the protocol limits, a short
// load with no error, and no goroutine left behind by stop.

// servers are the servers under test, each started on a free port: the
// two peers, and stepsd itself, so that all three are held to the same
// replies.
var servers = []struct {
	name  string
	start func() (string, func() error, error)
}{
	{"gnet", func() (string, func() error, error) { return StartGnet("127.0.0.1:0", 2) }},
	{"net", func() (string, func() error, error) { return StartNet("127.0.0.1:0") }},
	{"stepsd", func() (string, func() error, error) {
		cfg := stepsd.DefaultConfig()
		cfg.Addr, cfg.Reactors = "127.0.0.1:0", 2
		s, err := stepsd.Start(cfg)
		if err != nil {
			return "", nil, err
		}
		return s.Addr().String(), func() error { return s.Shutdown(time.Second) }, nil
	}},
}

func TestServers(t *testing.T) {
	for _, p := range servers {
		t.Run("server="+p.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			addr, stop, err := p.start()
			if err != nil {
				t.Fatal(err)
			}
			stopped := false
			defer func() {
				if !stopped {
					stop()
				}
			}()
			t.Run("commands", func(t *testing.T) { testCommands(t, addr) })
			t.Run("sleep", func(t *testing.T) { testSleep(t, addr) })
			t.Run("limits", func(t *testing.T) { testLimits(t, addr) })
			t.Run("load", func(t *testing.T) { testLoad(t, addr) })

			// A connection left open, in the middle of a SLEEP: stop must
			// close it and end its timer or goroutine.
			c := dial(t, addr)
			defer c.Close()
			io.WriteString(c, "SLEEP 3600000\n")
			time.Sleep(20 * time.Millisecond)
			stopped = true
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			checkGoroutines(t, before)
		})
	}
}

// client is one connection and its reader.
type client struct {
	t *testing.T
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return &client{t, c, bufio.NewReader(c)}
}

// send writes inline commands in one write.
func (c *client) send(lines ...string) {
	c.t.Helper()
	if _, err := io.WriteString(c, strings.Join(lines, "\r\n")+"\r\n"); err != nil {
		c.t.Fatal(err)
	}
}

// expect reads one reply per want, in order, rendered by readReply.
func (c *client) expect(want ...string) {
	c.t.Helper()
	for _, w := range want {
		got, err := readReply(c.r)
		if err != nil {
			c.t.Fatalf("reading the reply %q: %v", w, err)
		}
		if got != w {
			c.t.Fatalf("reply %q, want %q", got, w)
		}
	}
}

// readReply reads one RESP reply that is not an array and renders it: a
// simple string as its text, an error as "-" and its text, a bulk string
// as its bytes, nil as "(nil)", an integer as ":" and its digits.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return "", fmt.Errorf("reply line %q", line)
	}
	line = line[:len(line)-2]
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-', ':':
		return line, nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		if n < 0 {
			return "(nil)", nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		return string(b[:n]), nil
	}
	return "", fmt.Errorf("reply line %q", line)
}

func testCommands(t *testing.T, addr string) {
	c := dial(t, addr)
	defer c.Close()
	script := [][2]string{
		{"SET a 1", "OK"},
		{"GET a", "1"},
		{`SET a "two words"`, "OK"},
		{"GET a", "two words"},
		{"GET nope", "(nil)"},
		{"SET b 2", "OK"},
		{"DEL a b c", ":2"},
		{"DEL a", ":0"},
		{"GET a", "(nil)"},
		{`ECHO "hi  there"`, "hi  there"},
		{"echo lower", "lower"},
		{"PING", "PONG"},
		{"PING x", "x"},
		{"SLEEP 0", "OK"},
		{"FOO bar", "-ERR unknown command 'FOO'"},
		{"SET x", "-ERR wrong number of arguments for 'SET' command"},
		{"GET", "-ERR wrong number of arguments for 'GET' command"},
		{"SLEEP soon", "-ERR SLEEP takes milliseconds, 0 to 3600000"},
		{"SELECT 0", "OK"},
		{"HELLO 3", "-NOPROTO unsupported protocol version"},
		{"CLIENT SETNAME x", "OK"},
	}
	var lines, replies []string
	for _, s := range script {
		c.send(s[0])
		c.expect(s[1])
		lines, replies = append(lines, s[0]), append(replies, s[1])
	}
	c.send(lines...)
	c.expect(replies...)
}

func testSleep(t *testing.T, addr string) {
	c := dial(t, addr)
	defer c.Close()
	// Replies keep the requests' order behind SLEEPs, and a SLEEP holds
	// the replies after it, not those before.
	start := time.Now()
	c.send("ECHO before", "SLEEP 60", "ECHO a", "SET s 1", "SLEEP 10", "GET s", "SLEEP 0", "ECHO b")
	c.expect("before")
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("the reply before SLEEP 60 took %v", d)
	}
	c.expect("OK", "a", "OK", "OK", "1", "OK", "b")
	// The net peer sleeps one SLEEP after the other, gnet's timers run
	// side by side: either way, no sooner than the longest.
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("SLEEP 60 took %v", d)
	}

	// A SLEEP blocks no other connection.
	slow := dial(t, addr)
	defer slow.Close()
	slow.send("SLEEP 500", "ECHO late")
	time.Sleep(10 * time.Millisecond)
	start = time.Now()
	c.send("ECHO quick")
	c.expect("quick")
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("ECHO on another connection waited %v behind a SLEEP 500", d)
	}
	slow.expect("OK", "late")
}

// bulk encodes words as a RESP array.
func bulk(words ...string) string {
	b := "*" + strconv.Itoa(len(words)) + "\r\n"
	for _, w := range words {
		b += "$" + strconv.Itoa(len(w)) + "\r\n" + w + "\r\n"
	}
	return b
}

func testLimits(t *testing.T, addr string) {
	c := dial(t, addr)
	defer c.Close()
	// The longest bulk string is served.
	text := strings.Repeat("x", limits.MaxBulk)
	io.WriteString(c, bulk("ECHO", text))
	c.expect(text)
	// A longer one is answered with an error, after the replies before
	// it, and closes the connection.
	io.WriteString(c, bulk("ECHO", "first")+bulk("ECHO", text+"x")+bulk("ECHO", "ignored"))
	c.expect("first", "-ERR Protocol error: invalid bulk length")
	expectClosed(t, c)

	// So does an inline line of MaxLine bytes, without waiting for its end.
	c = dial(t, addr)
	defer c.Close()
	io.WriteString(c, "ECHO "+strings.Repeat("y", limits.MaxLine))
	c.expect("-ERR Protocol error: too big inline request")
	expectClosed(t, c)

	// Behind a SLEEP, the error waits for the SLEEP's reply; so does QUIT's.
	for _, last := range []string{"*1\r\n+x\r\n", "QUIT\r\n"} {
		c = dial(t, addr)
		defer c.Close()
		c.send("SLEEP 30", "ECHO second")
		io.WriteString(c, last)
		want := "-ERR Protocol error: expected '$'"
		if last == "QUIT\r\n" {
			want = "OK"
		}
		c.expect("OK", "second", want)
		expectClosed(t, c)
	}
}

func expectClosed(t *testing.T, c *client) {
	t.Helper()
	if line, err := c.r.ReadString('\n'); err == nil {
		t.Fatalf("after a protocol error: %q", line)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the connection is still open after a protocol error")
	}
}

func testLoad(t *testing.T, addr string) {
	for _, pipeline := range []int{1, 16} {
		res, err := RunLoad(LoadConfig{Addr: addr, Conns: 4, Pipeline: pipeline, Requests: 2000, Duration: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Errors != 0 || res.ErrCodes != nil {
			t.Errorf("pipeline %d: %d errors, ERR codes %v", pipeline, res.Errors, res.ErrCodes)
		}
		if res.Requests < 2000 || res.Requests > 2000+4*int64(pipeline) {
			t.Errorf("pipeline %d: %d requests counted, want 2000 to %d", pipeline, res.Requests, 2000+4*pipeline)
		}
		if res.ReqPerSec <= 0 || res.P50 <= 0 || res.P50 > res.P99 || res.P99 > res.P999 {
			t.Errorf("pipeline %d: %+v", pipeline, res)
		}
	}
	// The time bound alone stops a run, and the warmup is not counted.
	res, err := RunLoad(LoadConfig{Addr: addr, Conns: 2, Pipeline: 4, Duration: 100 * time.Millisecond, Warmup: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Requests == 0 || res.Elapsed > 100*time.Millisecond {
		t.Errorf("time-bounded: %+v", res)
	}
}

// checkGoroutines waits for the goroutine count to fall back to before.
func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after stop, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLoadAllocs checks that neither the load generator nor the peers
// allocate per request: ten times the requests cost about the same
// allocations (each run's own, dialing and per-connection buffers, are the
// same in both).
func TestLoadAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, p := range servers[:2] { // the peers: stepsd's allocations are its own tests' business
		t.Run("server="+p.name, func(t *testing.T) {
			addr, stop, err := p.start()
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			mallocs := func(requests int) uint64 {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				res, err := RunLoad(LoadConfig{Addr: addr, Conns: 4, Pipeline: 16, Requests: requests, Duration: 10 * time.Second})
				runtime.ReadMemStats(&after)
				if err != nil || res.Errors != 0 {
					t.Fatalf("%d errors, %v", res.Errors, err)
				}
				return after.Mallocs - before.Mallocs
			}
			mallocs(20_000) // every key SET once, so that SET overwrites from now on
			small, large := mallocs(20_000), mallocs(200_000)
			t.Logf("allocations: %d for 20,000 requests, %d for 200,000", small, large)
			if extra := float64(large) - float64(small); extra/180_000 > 0.001 {
				t.Errorf("%d allocations for 20,000 requests, %d for 200,000: %.4f per request", small, large, extra/180_000)
			}
		})
	}
}

func TestLoadCountsErrors(t *testing.T) {
	// A server that answers everything with an error: every reply is one,
	// counted by code.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var p stepsd.Parser
				var buf []byte
				tmp := make([]byte, 4096)
				for {
					n, err := c.Read(tmp)
					if err != nil {
						return
					}
					buf = append(buf, tmp[:n]...)
					for {
						req, n, _ := p.Parse(buf)
						if n == 0 {
							break
						}
						reply := "-DefenseRejected busy\r\n"
						if req.Op == stepsd.OpGet {
							reply = "+OK\r\n" // the wrong kind
						}
						buf = buf[n:]
						io.WriteString(c, reply)
					}
				}
			}()
		}
	}()
	res, err := RunLoad(LoadConfig{Addr: ln.Addr().String(), Conns: 2, Pipeline: 3, Requests: 300, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != res.Requests || res.ErrCodes["DefenseRejected"] != res.Requests*2/3 {
		t.Errorf("%d requests, %d errors, codes %v", res.Requests, res.Errors, res.ErrCodes)
	}
}

func TestSlowReaders(t *testing.T) {
	addr, stop, err := StartNet("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	called := false
	res, err := RunSlowReaders(SlowConfig{Addr: addr, Conns: 2, Pipeline: 4, TextLen: 1024, Duration: 200 * time.Millisecond}, func() { called = true })
	if err != nil {
		t.Fatal(err)
	}
	if !called || res.Requests == 0 || res.Bytes < res.Requests*1030 {
		t.Errorf("called %v, %+v", called, res)
	}
}

func TestHistogram(t *testing.T) {
	// Indexes grow with the value, and every bucket's upper bound is
	// within 1/histSub of every value in it.
	prev := 0
	for v := int64(0); v < 1<<histMaxBits; v += 1 + v/1000 {
		i := histIndex(v)
		if i < prev || i >= histBuckets {
			t.Fatalf("index %d of %d after %d", i, v, prev)
		}
		prev = i
		if up := histUpper(i); up < v || float64(up-v) > float64(v)/histSub {
			t.Fatalf("value %d in bucket %d, upper bound %d", v, i, up)
		}
	}
	if histIndex(math.MaxInt64) != histBuckets-1 || histIndex(-1) != 0 {
		t.Error("out-of-range values are not clamped")
	}

	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {0.999, 999 * time.Microsecond}, {1, time.Millisecond}} {
		got := h.Quantile(c.q)
		if got < c.want || float64(got-c.want) > float64(c.want)/histSub {
			t.Errorf("quantile %v: %v, want %v", c.q, got, c.want)
		}
	}
	var m Histogram
	m.Merge(&h)
	m.Merge(&h)
	if m.Count() != 2000 || m.Quantile(0.5) != h.Quantile(0.5) {
		t.Errorf("merged: %d values, median %v", m.Count(), m.Quantile(0.5))
	}
}
