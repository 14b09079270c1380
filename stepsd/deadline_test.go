//go:build linux

package stepsd

import (
	"strings"
	"testing"
	"time"
)

// TestTimeoutInLimiterQueue: requests that wait in the Limiter's queue (for
// its rate here) past their Timeout are answered -Timeout, in order, and
// the timed-out SET never reaches the store.
func TestTimeoutInLimiterQueue(t *testing.T) {
	s := start(t, Config{Rate: 1, Burst: 10, Timeout: 300 * time.Millisecond, Reactors: 1})
	c := dial(t, s)
	c.send("PING") // the second's one entry
	c.expect("PONG")
	begin := time.Now()
	c.send("SET k v", "GET k")
	for i := 0; i < 2; i++ {
		got, err := c.read()
		if err != nil || !strings.HasPrefix(got, "-Timeout") {
			t.Fatalf("queued reply %d: %q, %v; want -Timeout", i, got, err)
		}
	}
	if d := time.Since(begin); d < 250*time.Millisecond {
		t.Errorf("-Timeout after %v, before the Timeout (300ms)", d)
	}
	for i := 0; ; i++ {
		c.send("GET k")
		got, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got, "-Timeout") {
			if got != "(nil)" {
				t.Fatalf("GET k after a timed-out SET: %q, want (nil)", got)
			}
			break
		}
		if i == 20 {
			t.Fatal("no request served after the rate's period")
		}
	}
}

// TestTimeoutAcrossReads: requests of later reads behind a waiting one get
// their own deadlines, and answered requests leave the deadline list (no
// -Timeout for a request that was answered).
func TestTimeoutAcrossReads(t *testing.T) {
	s := start(t, Config{Timeout: 400 * time.Millisecond, Reactors: 1})
	c := dial(t, s)
	for i := 0; i < 20; i++ {
		c.send("SLEEP 1", "ECHO x")
		c.expect("OK", "x")
	}
	c.send("SLEEP 100")
	c.send("SLEEP 3000")
	c.expect("OK")
	got, err := c.read()
	if err != nil || !strings.HasPrefix(got, "-Timeout") {
		t.Fatalf("reply %q, %v; want -Timeout", got, err)
	}
	c.send("PING")
	c.expect("PONG")
}
