//go:build linux

package stepsd

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/internal/leakcheck"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
)

// start runs a server on a loopback port; cleanup shuts it down, then
// checks that no descriptor or goroutine outlives it.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	leakcheck.Check(t)
	cfg.Addr = "127.0.0.1:0"
	if cfg.Reactors == 0 {
		cfg.Reactors = 2
	}
	s, err := Start(cfg)
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

// client is one test connection.
type client struct {
	t  *testing.T
	c  *net.TCPConn
	br *bufio.Reader
}

func dial(t *testing.T, s *Server) *client {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &client{t: t, c: c.(*net.TCPConn), br: bufio.NewReader(c)}
}

func (c *client) send(lines ...string) {
	c.t.Helper()
	if _, err := io.WriteString(c.c, strings.Join(lines, "\n")+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) read() (string, error) {
	// Generous: under the race detector on a loaded machine, 64
	// pipelining connections' first replies took over 5s.
	_ = c.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	return readReply(c.br)
}

// skipReply reads one RESP reply that is not an array, without
// allocating, and returns its first byte ('+', '-', ':' or '$').
func skipReply(br *bufio.Reader) (byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil || len(line) < 3 {
		return 0, fmt.Errorf("reply %q: %v", line, err)
	}
	kind := line[0]
	if kind == '$' {
		n := 0
		for _, c := range line[1 : len(line)-2] {
			if c == '-' {
				return kind, nil // nil
			}
			n = n*10 + int(c-'0')
		}
		if _, err := br.Discard(n + 2); err != nil {
			return kind, err
		}
	}
	return kind, nil
}

// readReply reads one RESP reply and renders it as one string: a simple
// string as its text, an error as "-" and its text, a bulk string as its
// bytes, nil as "(nil)", an integer as ":" and its digits, an array as
// "[" its elements joined by "," "]", a nil array as "(nilarray)"
// (renderReply, unsorted).
func readReply(br *bufio.Reader) (string, error) { return renderReply(br, false) }

func (c *client) expect(want ...string) {
	c.t.Helper()
	for _, w := range want {
		got, err := c.read()
		if err != nil {
			c.t.Fatalf("reading reply for %q: %v", w, err)
		}
		if got != w {
			c.t.Fatalf("reply %q, want %q", got, w)
		}
	}
}

func (c *client) expectEOF() {
	c.t.Helper()
	if line, err := c.read(); err != io.EOF {
		c.t.Fatalf("got %q, %v; want the connection closed", line, err)
	}
}

func TestCommands(t *testing.T) {
	s := start(t, Config{})
	c := dial(t, s)
	tests := []struct{ req, reply string }{
		// Inline commands, as nc and telnet send them.
		{"GET k1", "(nil)"},
		{`SET k1 "hello world"`, "OK"},
		{"GET k1", "hello world"},
		{"SET k1 again", "OK"},
		{"get k1", "again"},
		{"SET k1 ''", "OK"},
		{"GET k1", ""},
		{"DEL k1", ":1"},
		{"DEL k1", ":0"},
		{"GET k1", "(nil)"},
		{"SET k2 2", "OK"},
		{"SET k3 3", "OK"},
		{"DEL k1 k2 k3 k4", ":2"},
		{`ECHO "a  b "`, "a  b "},
		{"PING", "PONG"},
		{"ping hi", "hi"},
		{"SLEEP 0", "OK"},
		{"SLEEP 20", "OK"},
		{"SET crlf v\r", "OK"},
		{"GET crlf", "v"},
		{"SELECT 0", "OK"},
		{"CONFIG GET save", "[save,]"},
		{"COMMAND DOCS quit", "[quit,[summary,Close the connection,since,1.0.0,group,connection]]"},
		{"COMMAND DOCS nosuch", "[]"},
		{"HELLO 3", "-NOPROTO unsupported protocol version"},
	}
	for _, tt := range tests {
		c.send(tt.req)
		c.expect(tt.reply)
	}
	// The same as arrays, as every client library sends them.
	arrays := []struct {
		req   []string
		reply string
	}{
		{[]string{"SET", "a key", "a\r\nvalue"}, "OK"},
		{[]string{"GET", "a key"}, "a\r\nvalue"},
		{[]string{"ECHO", ""}, ""},
		{[]string{"PING"}, "PONG"},
		{[]string{"DEL", "a key"}, ":1"},
		{[]string{"SLEEP", "5"}, "OK"},
		{[]string{"CLIENT", "SETNAME", "t"}, "OK"},
		{[]string{"HELLO", "2"}, "[server,redis,version,7.0.0,proto,:2,id,:1,mode,standalone,role,master,modules,[]]"},
	}
	for _, tt := range arrays {
		c.sendRaw(resp(tt.req...))
		c.expect(tt.reply)
	}
}

// sendRaw writes bytes as they are.
func (c *client) sendRaw(b string) {
	c.t.Helper()
	if _, err := io.WriteString(c.c, b); err != nil {
		c.t.Fatal(err)
	}
}

func TestMalformedRequests(t *testing.T) {
	s := start(t, Config{})
	c := dial(t, s)
	other := dial(t, s)
	tests := []struct{ req, reply string }{
		{"FLY", "-ERR unknown command 'FLY'"},
		{"SET k", "-ERR wrong number of arguments for 'SET' command"},
		{"SET k v EX 10", "-ERR syntax error"},
		{"GET", "-ERR wrong number of arguments for 'GET' command"},
		{"GET a b", "-ERR wrong number of arguments for 'GET' command"},
		{"DEL", "-ERR wrong number of arguments for 'DEL' command"},
		{"SLEEP soon", "-ERR SLEEP takes milliseconds, 0 to 3600000"},
		{"SLEEP 3600001", "-ERR SLEEP takes milliseconds, 0 to 3600000"},
		{"\x00\xff", "-ERR unknown command '\x00\xff'"},
		{"SELECT 1", "-ERR DB index is out of range"},
	}
	for _, tt := range tests {
		c.send(tt.req)
		c.expect(tt.reply)
	}
	// An empty line gets no reply, as in Redis.
	c.send("", "ECHO still-here")
	c.expect("still-here")
	other.send("ECHO fine")
	other.expect("fine")
	// Lost framing: the error, after the replies before it, and the
	// connection closes; the other one goes on.
	for _, bad := range []string{"*2\r\n+GET\r\n", "*x\r\n", "*1\r\n$-5\r\n", "ECHO \"open\n", "*1\r\n$3\r\nGETxx"} {
		d := dial(t, s)
		d.sendRaw("SLEEP 20\r\n" + resp("ECHO", "before") + bad)
		d.expect("OK", "before")
		got, err := d.read()
		if err != nil || !strings.HasPrefix(got, "-ERR Protocol error: ") {
			t.Errorf("%q: %q, %v; want a protocol error", bad, got, err)
		}
		d.expectEOF()
	}
	other.send("ECHO unaffected")
	other.expect("unaffected")
}

func TestQuit(t *testing.T) {
	s := start(t, Config{})
	c := dial(t, s)
	c.send("SLEEP 10", "QUIT", "ECHO never")
	c.expect("OK", "OK")
	c.expectEOF()
}

func TestRepliesInOrderAcrossSleepsAndShards(t *testing.T) {
	s := start(t, Config{})
	c := dial(t, s)
	// Pipelined: a slow request first, fast ones behind it, keys on both
	// shards; replies must come back in request order.
	var reqs, want []string
	reqs = append(reqs, "SLEEP 60")
	want = append(want, "OK")
	for i := 0; i < 50; i++ {
		reqs = append(reqs, fmt.Sprintf("SET key%d v%d", i, i), fmt.Sprintf("GET key%d", i), "SLEEP 1", fmt.Sprintf("ECHO %d", i))
		want = append(want, "OK", fmt.Sprintf("v%d", i), "OK", fmt.Sprintf("%d", i))
	}
	c.send(reqs...)
	c.expect(want...)
}

func TestKeysAreSharedAcrossConnectionsAndReactors(t *testing.T) {
	s := start(t, Config{Reactors: 2})
	a, b := dial(t, s), dial(t, s) // round-robin: one per reactor
	for i := 0; i < 40; i++ {
		a.send(fmt.Sprintf("SET shared%d from-a-%d", i, i))
		a.expect("OK")
		b.send(fmt.Sprintf("GET shared%d", i))
		b.expect(fmt.Sprintf("from-a-%d", i))
		b.send(fmt.Sprintf("DEL shared%d", i))
		b.expect(":1")
		a.send(fmt.Sprintf("GET shared%d", i))
		a.expect("(nil)")
	}
	// Every key was deleted, whichever reactor's connection set it.
	for i := range s.keys.stripes {
		st := &s.keys.stripes[i]
		st.mu.Lock()
		n := len(st.m)
		st.mu.Unlock()
		if n != 0 {
			t.Errorf("stripe %d keeps %d keys after every DEL", i, n)
		}
	}
}

func TestSleepDoesNotBlockOtherConnections(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	slow, fast := dial(t, s), dial(t, s)
	slow.send("SLEEP 300")
	begin := time.Now()
	fast.send("ECHO quick")
	fast.expect("quick")
	if d := time.Since(begin); d > 250*time.Millisecond {
		t.Errorf("ECHO on another connection took %v behind a SLEEP 300 on the same reactor", d)
	}
	slow.expect("OK")
}

func TestTimeout(t *testing.T) {
	s := start(t, Config{Timeout: 50 * time.Millisecond})
	c := dial(t, s)
	c.send("SLEEP 2000", "ECHO after")
	got, err := c.read()
	if err != nil || !strings.HasPrefix(got, "-Timeout") {
		t.Fatalf("reply %q, %v; want -Timeout ...", got, err)
	}
	c.expect("after")
	// The request's pooled state is reused safely after its timer was
	// canceled: more SLEEPs on the same connection behave.
	c.send("SLEEP 10", "SLEEP 10")
	c.expect("OK", "OK")
}

// The busy SLEEP lasts four minutes and is let go by a reset of its
// connection, so the rejection is checked while the slot is surely held
// (a SLEEP 300 could end first on a loaded machine, and the ECHO got in).
func TestOverloadIsRejected(t *testing.T) {
	s := start(t, Config{Concurrent: 1, Queue: 0, Timeout: 5 * time.Minute})
	busy, other := dial(t, s), dial(t, s)
	busy.send("SLEEP 240000")
	waitHolders(t, s, 1) // the SLEEP holds the only slot
	other.send("ECHO x")
	got, err := other.read()
	if err != nil || !strings.HasPrefix(got, "-DefenseRejected") {
		t.Fatalf("reply %q, %v; want -DefenseRejected ...", got, err)
	}
	_ = busy.c.SetLinger(0) // close sends RST: the SLEEP is canceled, its slot freed
	_ = busy.c.Close()
	waitHolders(t, s, 0)
	other.send("ECHO y") // the slot is free again
	other.expect("y")
}

func TestOverLimitsClosesOnlyThatConnection(t *testing.T) {
	s := start(t, Config{MaxLine: 64, MaxBulk: 100, MaxArgs: 4})
	other := dial(t, s)
	tests := []struct{ in, reply string }{
		{strings.Repeat("x", 100) + "\n", "-ERR Protocol error: too big inline request"},
		{strings.Repeat("y", 200), "-ERR Protocol error: too big inline request"}, // no end of line at all
		{resp("ECHO", strings.Repeat("z", 101)), "-ERR Protocol error: invalid bulk length"},
		{"*5\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"ECHO a b c d\n", "-ERR Protocol error: too many arguments in inline request"},
	}
	for _, tt := range tests {
		c := dial(t, s)
		c.sendRaw("SLEEP 30\n" + resp("ECHO", "before") + tt.in)
		c.expect("OK", "before", tt.reply)
		c.expectEOF()
	}
	other.send("ECHO unaffected")
	other.expect("unaffected")
}

// writeUntilStalled writes req to c again and again, reading nothing,
// until a write cannot finish within 300ms (the server stopped reading),
// and returns how many whole writes went out. It fails the test if the
// server keeps reading: past 16 Ki requests (the kernel's socket buffers
// both ways, HighWater and MaxPipeline hold far less), nothing holds
// them back.
func writeUntilStalled(t *testing.T, c *client, req []byte) (sent int) {
	t.Helper()
	for {
		_ = c.c.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.c.Write(req); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return sent
			}
			t.Fatal(err)
		}
		sent++
		if sent > 16<<10 {
			t.Fatal("the server kept reading from a peer that does not read")
		}
	}
}

func TestSlowReaderIsBackpressured(t *testing.T) {
	s := start(t, Config{MaxPipeline: 16})
	c := dial(t, s)
	// Write requests with big replies and read nothing: the server must stop
	// reading, so the client's writes stall.
	text := strings.Repeat("z", 4000) // a line under MaxLine
	line := []byte("ECHO " + text + "\n")
	sent := writeUntilStalled(t, c, line)
	t.Logf("the server stopped reading after %d requests (%d KiB)", sent, sent*len(line)>>10)
	if s.Conns() != 1 {
		t.Fatalf("Conns = %d, want 1", s.Conns())
	}
	// Now read: every request that reached the server is answered, in order.
	_ = c.c.SetWriteDeadline(time.Time{})
	_ = c.c.CloseWrite()
	n := 0
	for {
		got, err := c.read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if got != text {
			t.Fatalf("reply %d: %.20q...", n, got)
		}
		n++
	}
	// The last write may have been cut short by the deadline.
	if n != sent && n != sent+1 {
		t.Errorf("%d replies for %d requests written", n, sent)
	}
}

// Shutdown returns once its requests are answered, not when its grace
// (10 minutes) ends: no time is asserted, a loaded machine only slows it.
func TestShutdownFinishesRequestsInFlight(t *testing.T) {
	leakcheck.Check(t)
	s, err := Start(Config{Addr: "127.0.0.1:0", Reactors: 2})
	if err != nil {
		t.Fatal(err)
	}
	var cs []*client
	for i := 0; i < 8; i++ {
		c := dial(t, s)
		c.send("ECHO first", "SLEEP 150")
		c.expect("first") // the SLEEP is in flight
		cs = append(cs, c)
	}
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(10 * time.Minute) }() // a grace it must not wait out
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.expect("OK")
			c.expectEOF()
		}()
	}
	wg.Wait()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(reactortest.Hang):
		t.Fatalf("Shutdown still waits %v after every SLEEP 150 was answered: it waits out its grace", reactortest.Hang)
	}
	if _, err := net.DialTimeout("tcp", s.Addr().String(), time.Second); err == nil {
		t.Error("a connection was accepted after Shutdown")
	}
	for _, c := range cs {
		_ = c.c.Close()
	}
}

// The SLEEP is known to be running (its Started counter) before Shutdown
// begins, and lasts four minutes: Shutdown must return once its grace has
// passed, long before reactortest.Hang, or the test fails.
func TestShutdownTimesOutStuckRequests(t *testing.T) {
	s, err := Start(Config{Addr: "127.0.0.1:0", Reactors: 1, Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, s)
	c.send("SLEEP 240000")
	waitFor(t, reactortest.Hang, "the SLEEP to start", func() bool { return commandCounts(s)["SLEEP"].Started == 1 })
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(100 * time.Millisecond) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(reactortest.Hang):
		t.Fatalf("Shutdown with grace 100ms still waits after %v for a SLEEP of 4 minutes", reactortest.Hang)
	}
	c.expectEOF()
}

func TestManyConnectionsPipelined(t *testing.T) {
	s := start(t, Config{})
	setGetPipelined(t, s, 64, 200, 10)
}

// setGetPipelined has conns connections each pipeline rounds of
// "SET key value, GET key" over keys keys of its own, all written at once,
// and checks that every GET sees the SET just before it.
func setGetPipelined(t *testing.T, s *Server, conns, rounds, keys int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := 0; i < conns; i++ {
		c := dial(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b strings.Builder
			for j := 0; j < rounds; j++ {
				fmt.Fprintf(&b, "SET c%dk%d %d\nGET c%dk%d\n", i, j%keys, j, i, j%keys)
			}
			go func() { _, _ = io.WriteString(c.c, b.String()) }()
			for j := 0; j < rounds; j++ {
				for _, want := range []string{"OK", fmt.Sprintf("%d", j)} {
					got, err := c.read()
					if err != nil || got != want {
						errs <- fmt.Errorf("conn %d round %d: %q, %v; want %q", i, j, got, err, want)
						return
					}
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

// TestPipelinedRequestsKeepTheirBytes sends, in one write, requests whose
// words the parser composes in its own scratch (inline words in quotes,
// CONFIG GET's reply) before and after key commands that wait for their
// turn (behind a SLEEP): each request must keep its own key, value and
// reply, whatever the requests parsed after it in the same read.
func TestPipelinedRequestsKeepTheirBytes(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	c := dial(t, s)
	const cfg = "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$4\r\nsave\r\n"
	const cfg2 = "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$10\r\nappendonly\r\n"
	batch := `SET "k 1" "v 1"` + "\r\n" + `SET "k 2" "v 2"` + "\r\n" + cfg + cfg2 +
		"SLEEP 20\r\n" + `SET "k 3" "v 3"` + "\r\n" + "*3\r\n$3\r\nSET\r\n$3\r\nk 4\r\n$3\r\nv 4\r\n" +
		`ECHO "e 1"` + "\r\n" + "*2\r\n$4\r\nECHO\r\n$3\r\ne 2\r\n" + cfg +
		`GET "k 1"` + "\r\n" + `GET "k 2"` + "\r\n" + "*2\r\n$3\r\nGET\r\n$3\r\nk 3\r\n" + `GET "k 4"` + "\r\n"
	if _, err := io.WriteString(c.c, batch); err != nil {
		t.Fatal(err)
	}
	c.expect("OK", "OK", "[save,]", "[appendonly,no]", "OK", "OK", "OK", "e 1", "e 2", "[save,]", "v 1", "v 2", "v 3", "v 4")
}
