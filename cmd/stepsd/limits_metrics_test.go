//go:build linux

package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/stepsd"
)

// limitsClient is a test connection. Its two methods are the only code of
// this file that knows the wire protocol.
type limitsClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func limitsDial(t *testing.T, s *stepsd.Server) *limitsClient {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &limitsClient{t: t, c: c, br: bufio.NewReader(c)}
}

// send writes a command (raw: the bytes as given, for a partial or an
// overlong one) without reading a reply.
func (c *limitsClient) send(raw string) {
	c.t.Helper()
	if _, err := io.WriteString(c.c, raw); err != nil {
		c.t.Fatal(err)
	}
}

// command sends one command and returns its reply; "" with the error once
// the server ended the connection.
func (c *limitsClient) command(cmd string) (string, error) {
	c.t.Helper()
	c.send(cmd + "\n")
	line, err := c.br.ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}

// expectEnd reads until the server ends the connection.
func (c *limitsClient) expectEnd() {
	c.t.Helper()
	if _, err := io.Copy(io.Discard, c.br); err != nil && !strings.Contains(err.Error(), "reset") {
		c.t.Fatalf("waiting for the server to end the connection: %v", err)
	}
}

// Every limit's refusals and timeouts are Prometheus
// counters on /metrics, and they move when a limit refuses.
func TestAdminMetricsCountRefusals(t *testing.T) {
	cfg := stepsd.DefaultConfig()
	cfg.Addr, cfg.Reactors = "127.0.0.1:0", 2
	cfg.Concurrent, cfg.Queue = 1, 0
	cfg.MaxConns, cfg.ReadTimeout, cfg.MaxLine = 2, 150*time.Millisecond, 32
	s, err := stepsd.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(time.Second)
	hs := httptest.NewServer(adminHandler(s))
	defer hs.Close()

	busy, b := limitsDial(t, s), limitsDial(t, s)
	busy.send("SLEEP 2000\n") // holds the one Limiter slot
	// The sleep holds the slot before b asks: sent on another connection
	// (maybe another reactor), an ECHO could otherwise take the slot
	// first and have the SLEEP refused, and then every ECHO succeeds.
	deadline := time.Now().Add(5 * time.Second)
	for s.Metrics(context.Background()).Concurrency.Holders != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the SLEEP never held the Limiter's slot")
		}
		time.Sleep(time.Millisecond)
	}
	// Rejected by the Limiter while the sleep holds the slot.
	for {
		got, err := b.command("ECHO x")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(got, "DefenseRejected") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never rejected: %q", got)
		}
	}
	limitsDial(t, s).expectEnd() // a third connection: over -maxconns
	b.send("ECHO never end")     // a partial line: -readtimeout
	b.expectEnd()
	for s.Conns() != 1 { // b's slot is free once its close is counted
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want 1", s.Conns())
		}
		time.Sleep(time.Millisecond)
	}
	long := limitsDial(t, s)
	long.send("ECHO " + strings.Repeat("y", 64) + "\n") // over -maxline
	long.expectEnd()

	body := get(t, hs.URL+"/metrics")
	for _, want := range []string{
		"# TYPE stepsd_connections_refused_total counter\n",
		"stepsd_connections_refused_total 1\n",
		"stepsd_connections_accepted_total 3\n",
		`stepsd_connections_closed_total{reason="read_timeout"} 1` + "\n",
		`stepsd_connections_closed_total{reason="protocol_error"} 1` + "\n",
		`stepsd_connections_closed_total{reason="idle_timeout"} 0` + "\n",
		`stepsd_connections_closed_total{reason="write_timeout"} 0` + "\n",
		"# TYPE stepsd_connections_reset_total counter\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, `stepsd_limiter_rejected_total{part="concurrency"} 0`+"\n") {
		t.Errorf("the Limiter's rejection is not counted:\n%s", body)
	}
}
