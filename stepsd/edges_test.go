//go:build linux

package stepsd

import (
	"strings"
	"testing"
	"time"
)

// The protocol as these tests use it: one command and its reply, a batch
// of commands without their replies, and how a reply says it was
// rejected. Nothing else in this file knows the wire format.

// command sends one command and returns its reply.
func command(c *client, args ...string) string {
	c.t.Helper()
	c.send(strings.Join(args, " "))
	got, err := c.read()
	if err != nil {
		c.t.Fatalf("reply to %q: %v", args, err)
	}
	return got
}

// sendN sends the same command n times, in one write, without reading.
func sendN(c *client, n int, args ...string) {
	c.t.Helper()
	line := strings.Join(args, " ")
	lines := make([]string, n)
	for i := range lines {
		lines[i] = line
	}
	c.send(lines...)
}

// rejected reports whether a reply is the Limiter's DefenseRejected.
func rejected(reply string) bool { return strings.HasPrefix(reply, "-DefenseRejected") }

// The reproduction of a reported bug: a client with a full pipeline
// (MaxPipeline requests in flight, so the server stopped reading it) that
// resets gives its Limiter slots back at once, as one with fewer does: the
// reset is seen although nothing reads the connection.
func TestResetWithFullPipelineReturnsLimiterSlots(t *testing.T) {
	const n = 256
	s := start(t, Config{Concurrent: n, Queue: 0, MaxPipeline: n, Timeout: 10 * time.Second})
	bad := dial(t, s)
	sendN(bad, n, "SLEEP", "3000")
	waitFor(t, 5*time.Second, "the sleeps to hold every slot", func() bool {
		c, _ := s.limiterStats()
		return c.Holders == n
	})
	other := dial(t, s)
	if got := command(other, "ECHO", "x"); !rejected(got) {
		t.Fatalf("with every slot held: %q, want DefenseRejected", got)
	}
	_ = bad.c.SetLinger(0)
	began := time.Now()
	_ = bad.c.Close() // RST
	// The slots come back when the server sees the reset; the sleeps
	// have 3s to go.
	waitFor(t, 2*time.Second, "the reset client's slots to come back", func() bool {
		c, _ := s.limiterStats()
		return c.Holders == 0
	})
	window := time.Since(began)
	if got := command(other, "ECHO", "y"); got != "y" {
		t.Fatalf("after the reset: %q, want y", got)
	}
	t.Logf("slots back %v after the reset (the sleeps had 3s to go)", window)
}
