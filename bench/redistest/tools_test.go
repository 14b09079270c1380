//go:build linux

package redistest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/stepsd"
	"github.com/redis/go-redis/v9"
)

// need returns the path of a program, or skips the test saying which
// Debian package has it (make test installs them with apt-get as root).
func need(t *testing.T, program, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		t.Skipf("%s not installed (Debian package %s; `make test` installs it as root with apt-get): skipped", program, pkg)
	}
	return p
}

func hostPort(t *testing.T, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

// run runs a program with a deadline and returns its output.
func run(t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
	return string(out)
}

func TestRedisCLI(t *testing.T) {
	cli := need(t, "redis-cli", "redis-tools")
	s := startStepsd(t, stepsd.Config{})
	h, p := hostPort(t, s.Addr().String())
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"set", "a", "b c"}, "OK\n"},
		{[]string{"get", "a"}, "b c\n"},
		{[]string{"get", "nothing"}, "\n"}, // nil, as redis-cli prints it when not on a terminal
		{[]string{"del", "a", "z"}, "1\n"},
		{[]string{"ping"}, "PONG\n"},
		{[]string{"sleep", "10"}, "OK\n"},
		{[]string{"echo", "x"}, "x\n"},
		{[]string{"fly"}, "ERR unknown command 'fly'\n"},
	}
	for _, tt := range tests {
		args := append([]string{"-h", h, "-p", p}, tt.args...)
		if got := strings.TrimRight(run(t, "", cli, args...), "\n") + "\n"; got != tt.want {
			t.Errorf("redis-cli %s: %q, want %q", strings.Join(tt.args, " "), got, tt.want)
		}
	}
	// Commands on stdin, one connection; and RESP3 asked for and refused.
	got := run(t, "set k v\nget k\n", cli, "-h", h, "-p", p)
	if got != "OK\nv\n" {
		t.Errorf("redis-cli with commands on stdin: %q", got)
	}
	got = run(t, "", cli, "-3", "-h", h, "-p", p, "ping")
	if !strings.HasSuffix(got, "PONG\n") {
		t.Errorf("redis-cli -3 ping: %q", got)
	}
}

func TestRedisBenchmark(t *testing.T) {
	rb := need(t, "redis-benchmark", "redis-tools")
	s := startStepsd(t, stepsd.Config{})
	h, p := hostPort(t, s.Addr().String())
	out := run(t, "", rb, "-h", h, "-p", p, "-t", "set,get,ping", "-n", "2000", "-c", "8", "-P", "4", "--csv")
	// One CSV row per test, each with a rate above zero.
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ",")
		if len(f) < 2 || !strings.HasPrefix(f[0], `"`) || f[0] == `"test"` {
			continue
		}
		rps, err := strconv.ParseFloat(strings.Trim(f[1], `"`), 64)
		if err != nil || rps <= 0 {
			t.Errorf("redis-benchmark row %q", line)
		}
		rows++
	}
	if rows < 4 { // PING_INLINE, PING_MBULK, SET, GET
		t.Errorf("redis-benchmark printed %d rows:\n%s", rows, out)
	}
}

// TestTwemproxy shards keys over two stepsd processes (cmd/stepsd, built
// for the test, as the README's recipe runs them) through twemproxy
// (nutcracker), a go-redis client talking to the proxy; each key is found
// on exactly one backend, asked directly, and both hold some.
func TestTwemproxy(t *testing.T) {
	nc := need(t, "nutcracker", "nutcracker")
	bin := buildStepsd(t)
	a := startStepsdProcess(t, bin, "-reactors", "1")
	b := startStepsdProcess(t, bin, "-reactors", "1")
	port := freePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "nutcracker.yml")
	yml := fmt.Sprintf(`stepsd:
  listen: 127.0.0.1:%d
  hash: fnv1a_64
  distribution: ketama
  redis: true
  auto_eject_hosts: false
  timeout: 2000
  servers:
   - %s:1 a
   - %s:1 b
`, port, a, b)
	if err := os.WriteFile(conf, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(nc, "-t", "-c", conf).CombinedOutput(); err != nil {
		t.Fatalf("nutcracker -t: %v\n%s", err, out)
	}
	cmd := exec.Command(nc, "-c", conf, "-s", strconv.Itoa(freePort(t)), "-o", filepath.Join(dir, "nutcracker.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "nutcracker.log"))
			t.Logf("nutcracker.log:\n%s", log)
		}
	})
	proxy := fmt.Sprintf("127.0.0.1:%d", port)
	waitFor(t, func() bool {
		c, err := net.Dial("tcp", proxy)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	// go-redis v9 sends HELLO on connect whatever its options, and
	// twemproxy closes a connection on a command it does not know
	// (go-redis issue 2616): helloShim answers it on the client's side as
	// a server without HELLO would, and go-redis goes on in RESP2.
	c := client(t, proxy, func(o *redis.Options) {
		o.Protocol = 2
		o.DisableIdentity = true // CLIENT SETINFO: twemproxy does not know it either
		o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &helloShim{Conn: c}, nil
		}
	})
	ctx := ctx(t)
	const n = 200
	p := c.Pipeline()
	for i := 0; i < n; i++ {
		p.Set(ctx, fmt.Sprintf("key:%d", i), i, 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if v, err := c.Get(ctx, fmt.Sprintf("key:%d", i)).Int(); err != nil || v != i {
			t.Fatalf("GET key:%d through the proxy: %d, %v", i, v, err)
		}
	}
	da, db := client(t, a, nil), client(t, b, nil)
	onA, onB := 0, 0
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("key:%d", i)
		_, errA := da.Get(ctx, k).Result()
		_, errB := db.Get(ctx, k).Result()
		switch {
		case errA == nil && errB == redis.Nil:
			onA++
		case errB == nil && errA == redis.Nil:
			onB++
		default:
			t.Fatalf("%s: on a %v, on b %v; want on exactly one", k, errA, errB)
		}
	}
	if onA == 0 || onB == 0 {
		t.Errorf("keys on a: %d, on b: %d; want both to hold some", onA, onB)
	}
	t.Logf("%d keys through twemproxy: %d on one stepsd process, %d on the other", n, onA, onB)
	// Multi-key DEL is split by the proxy and summed.
	if got, err := c.Del(ctx, "key:1", "key:2", "key:3", "none").Result(); err != nil || got != 3 {
		t.Errorf("DEL through the proxy: %d, %v", got, err)
	}
}

// buildStepsd builds cmd/stepsd into the test's temporary directory with
// the go tool that runs the test (GOROOT's, which go test sets, else the
// one on PATH).
func buildStepsd(t *testing.T) string {
	t.Helper()
	goTool := "go"
	if root := os.Getenv("GOROOT"); root != "" {
		if g := filepath.Join(root, "bin", "go"); fileExists(g) {
			goTool = g
		}
	}
	bin := filepath.Join(t.TempDir(), "stepsd")
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(c, goTool, "build", "-o", bin, "github.com/asyncsteps/asyncsteps/cmd/stepsd").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/stepsd: %v\n%s", err, out)
	}
	return bin
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// startStepsdProcess runs the stepsd program bin on a free loopback port
// (-addr 127.0.0.1:0, then args) and returns the address it logs that it
// listens on. The test's cleanup stops it with SIGTERM, as a user's
// Ctrl-C would, and fails the test if it does not exit cleanly.
func startStepsdProcess(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder // what it logged, shown if the test fails
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logged.WriteString(line + "\n")
			if _, rest, ok := strings.Cut(line, "stepsd: listening on "); ok {
				a, _, _ := strings.Cut(rest, " ")
				select {
				case addr <- a:
				default:
				}
			}
		}
	}()
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("stepsd process: %v", err)
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("stepsd process did not exit within 10s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("stepsd %s logged:\n%s", strings.Join(args, " "), logged.String())
		}
	})
	go func() {
		<-done // the pipe is read to its end before Wait closes it
		exited <- cmd.Wait()
	}()
	select {
	case a := <-addr:
		return a
	case <-done:
		t.Fatalf("stepsd exited before it listened")
	case <-time.After(30 * time.Second):
		t.Fatalf("stepsd did not log its address within 30s")
	}
	return ""
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// helloShim is a connection that answers a HELLO request itself with
// "-ERR unknown command 'HELLO'" (what a Redis before 6 says) instead of
// sending it on.
type helloShim struct {
	net.Conn
	reply []byte // the answer to the HELLO, not read yet
}

func (c *helloShim) Write(b []byte) (int, error) {
	if len(c.reply) == 0 && bytes.Contains(b, []byte("\r\n$5\r\nhello\r\n")) && bytes.HasPrefix(b, []byte("*")) &&
		bytes.Count(b, []byte("*")) == 1 {
		c.reply = []byte("-ERR unknown command 'HELLO'\r\n")
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *helloShim) Read(b []byte) (int, error) {
	if len(c.reply) > 0 {
		n := copy(b, c.reply)
		c.reply = c.reply[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}
