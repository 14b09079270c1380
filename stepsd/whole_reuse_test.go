//go:build linux

package stepsd

import (
	"strings"
	"testing"
)

// The flow the shard keeps for whole reads (shard.whole) after a run
// whose request panicked (directError answered it, the run went on and
// left the Limiter) and after its connection closed: the next whole reads,
// on the same connection and on a new one, run in the same flow, its root
// ended, and the one Limiter slot (Concurrent 1) is free for them (a slot
// the kept flow still held would leave them queued until Timeout).
func TestWholeFlowKeptAfterPanicAndClose(t *testing.T) {
	s := start(t, Config{Reactors: 1, Concurrent: 1})
	sh := s.shards[0]
	kept := func() (*flow, bool) {
		type st struct {
			fl   *flow
			exec bool
		}
		ch := make(chan st, 1)
		sh.r.Immediate(func() {
			x := st{fl: sh.whole}
			if x.fl != nil {
				x.exec = x.fl.root.Executing() || x.fl.runHeld
			}
			ch <- x
		})
		x := <-ch
		return x.fl, x.exec
	}
	c := dial(t, s)
	c.sendRaw(resp("SET", "a", "1"))
	c.expect("OK")
	fl0, busy := kept()
	if fl0 == nil || busy {
		t.Fatalf("after a whole read: kept flow %p, executing or holding the Limiter %v", fl0, busy)
	}

	// A SET whose key's stripe has no map panics in the run step.
	bad := "bad"
	done := make(chan map[string]*entry, 1)
	st := s.keys.stripeOf([]byte(bad))
	for st == s.keys.stripeOf([]byte("a")) {
		bad += "x"
		st = s.keys.stripeOf([]byte(bad))
	}
	sh.r.Immediate(func() { st.mu.Lock(); m := st.m; st.m = nil; st.mu.Unlock(); done <- m })
	m := <-done
	for _, last := range []bool{false, true} {
		// The panicking request inside the run, then as its last (where
		// directError, not the run step, leaves the Limiter).
		in, want := resp("GET", "a")+resp("SET", bad, "2")+resp("ECHO", "after"), "after"
		if last {
			in, want = resp("GET", "a")+resp("SET", bad, "2"), ""
		}
		c.sendRaw(in)
		c.expect("1")
		if got, err := c.read(); err != nil || !strings.HasPrefix(got, "-InternalError") {
			t.Fatalf("reply %q, %v; want -InternalError", got, err)
		}
		if want != "" {
			c.expect(want)
		}
	}
	sh.r.Immediate(func() { st.mu.Lock(); st.m = m; st.mu.Unlock(); done <- nil })
	<-done
	if fl, busy := kept(); fl != fl0 || busy {
		t.Fatalf("after a run that panicked: kept flow %p (want %p), executing or holding the Limiter %v", fl, fl0, busy)
	}
	c.sendRaw(resp("ECHO", "x"))
	c.expect("x")

	_ = c.c.Close()
	c2 := dial(t, s)
	for i := 0; i < 3; i++ {
		c2.sendRaw(resp("GET", "a") + resp("PING"))
		c2.expect("1", "PONG")
	}
	if fl, busy := kept(); fl != fl0 || busy {
		t.Fatalf("after a close and a new connection: kept flow %p (want %p), executing or holding the Limiter %v", fl, fl0, busy)
	}
	checkNoStrays(t, s)
}
