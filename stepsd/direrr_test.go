//go:build linux

package stepsd

import (
	"context"
	"strings"
	"testing"
)

// TestDirectRunPanicsKeepDepth: however many requests of one direct run
// panic, the step each fails in is as deep as the second one's, so each
// panic's error (its AsyncStack, captured by walking the failing step's
// frames to the root) costs the same: a run went on after each failure in
// a step nested in the failed one, and its k-th panic walked k frames
// (quadratic in the failures of one read;
// profiles/notes/2026-11-28-review-bugs2-round10.md). The
// last failure's AsyncStack stays in the kept whole flow's root State
// (reset only by New and Release), so its length is the failing step's
// depth. What a client sees and the counters are those of a request per
// failure answered as serveError answers it, whether the run is of one
// command (counted after the run step's loop) or mixed, and whether the
// last request is the one that fails (directError leaves the Limiter
// then).
func TestDirectRunPanicsKeepDepth(t *testing.T) {
	s := start(t, Config{Reactors: 1, Concurrent: 1})
	sh := s.shards[0]
	c, nc := openConn(t, s)
	// Every SET of key panics: its stripe has no map (a new key's insert
	// panics, TestStorePanicReleasesStripe); key2's does not.
	key, key2 := "deep", "fine"
	st := s.keys.stripeOf([]byte(key))
	for s.keys.stripeOf([]byte(key2)) == st {
		key2 += "x"
	}
	var m map[string]*entry
	onLoop(sh, func() { st.mu.Lock(); m, st.m = st.m, nil; st.mu.Unlock() })
	defer onLoop(sh, func() { st.mu.Lock(); st.m = m; st.mu.Unlock() })
	counts := func() map[string]CommandMetrics {
		out := map[string]CommandMetrics{}
		for _, x := range s.Metrics(context.Background()).Commands[0] {
			out[x.Command] = x
		}
		return out
	}
	for _, tc := range []struct {
		name string
		one  bool // every request a SET (the run counts one command after its loop)
		last bool // the run ends with a failed SET
	}{
		{"one command", true, false},
		{"one command, last fails", true, true},
		{"mixed", false, false},
		{"mixed, last fails", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// run sends a whole read with k failing SETs and returns the
			// depth the last one failed at.
			run := func(k int) int {
				t.Helper()
				before := counts()
				ok, okReply := resp("SET", key2, "v"), "OK"
				if !tc.one {
					ok, okReply = resp("ECHO", "e"), "e"
				}
				var data strings.Builder
				want := []string{okReply}
				data.WriteString(ok)
				for i := 0; i < k; i++ {
					data.WriteString(resp("SET", key, "v"))
					want = append(want, "-InternalError")
					if !tc.last || i < k-1 {
						data.WriteString(ok)
						want = append(want, okReply)
					}
				}
				var took, depth int
				kept := false
				onLoop(sh, func() {
					took = (*handler)(s).OnData(nc, []byte(data.String()))
					if fl := sh.whole; fl != nil {
						kept = !fl.root.Executing() && !fl.runHeld
						depth = len(fl.root.State().AsyncStack)
					}
				})
				if took != data.Len() || !kept {
					t.Fatalf("k %d: OnData took %d of %d bytes, whole flow kept and ended %v", k, took, data.Len(), kept)
				}
				for i, w := range want {
					got, err := c.read()
					if err != nil || !strings.HasPrefix(got, w) {
						t.Fatalf("k %d: reply %d %q, %v; want %q", k, i, got, err, w)
					}
				}
				nok := uint64(len(want) - k)
				after := counts()
				set, okc := after["SET"], after["SET"]
				if !tc.one {
					okc = after["ECHO"]
				}
				wantSet := CommandMetrics{Command: "SET", Started: before["SET"].Started + uint64(k), Failed: before["SET"].Failed + uint64(k), Succeeded: before["SET"].Succeeded}
				if tc.one {
					wantSet.Started += nok
					wantSet.Succeeded += nok
				} else if okc.Started != before["ECHO"].Started+nok || okc.Succeeded != before["ECHO"].Succeeded+nok || okc.Failed != before["ECHO"].Failed {
					t.Errorf("k %d: ECHO %+v, before %+v; want %d more started and succeeded", k, okc, before["ECHO"], nok)
				}
				if set.Started != wantSet.Started || set.Failed != wantSet.Failed || set.Succeeded != wantSet.Succeeded {
					t.Errorf("k %d: SET %+v; want started %d, failed %d, succeeded %d", k, set, wantSet.Started, wantSet.Failed, wantSet.Succeeded)
				}
				if cs, _ := s.limiterStats(); cs.Holders != 0 {
					t.Errorf("k %d: Limiter %+v after the read, want no holder", k, cs)
				}
				if k, flag := slotsClean(t, sh); k != 0 || flag {
					t.Errorf("%d dirty slots, reqsDirty %v after the read", k, flag)
				}
				return depth
			}
			d2 := run(2)
			for _, k := range []int{3, 8, 100} {
				if d := run(k); d != d2 {
					t.Errorf("the last of %d failures in a read failed %d frames deep, the last of 2 %d: want the same", k, d, d2)
				}
			}
			// The connection and the Limiter (Concurrent 1) go on.
			c.sendRaw(resp("SET", key2, "w") + resp("GET", key2))
			c.expect("OK", "w")
		})
	}
	checkNoStrays(t, s)
}

// TestRunStepPanicsKeepDepth: as TestDirectRunPanicsKeepDepth for the
// general path's run step (a read whose first request is an inline
// command, which no direct run takes): runError goes on after each failed
// request at one depth. The flows of the read are back in the pool after
// it; their roots' AsyncStacks, emptied before the read, hold the depth
// the last failure of the read failed at.
func TestRunStepPanicsKeepDepth(t *testing.T) {
	s := start(t, Config{Reactors: 1, Concurrent: 1})
	sh := s.shards[0]
	c, nc := openConn(t, s)
	key := "deeprun"
	st := s.keys.stripeOf([]byte(key))
	var m map[string]*entry
	onLoop(sh, func() { st.mu.Lock(); m, st.m = st.m, nil; st.mu.Unlock() })
	defer onLoop(sh, func() { st.mu.Lock(); st.m = m; st.mu.Unlock() })
	flows := func(fn func(fl *flow)) {
		if sh.whole != nil {
			fn(sh.whole)
		}
		for fl := sh.freeFlows; fl != nil; fl = fl.free {
			fn(fl)
		}
	}
	run := func(k int) int {
		t.Helper()
		data := "PING\r\n" + strings.Repeat(resp("SET", key, "v")+resp("ECHO", "e"), k)
		var took, depth int
		onLoop(sh, func() {
			flows(func(fl *flow) { fl.root.State().AsyncStack = nil })
			took = (*handler)(s).OnData(nc, []byte(data))
			flows(func(fl *flow) { depth = max(depth, len(fl.root.State().AsyncStack)) })
		})
		if took != len(data) {
			t.Fatalf("k %d: OnData took %d of %d bytes", k, took, len(data))
		}
		c.expect("PONG")
		for i := 0; i < k; i++ {
			if got, err := c.read(); err != nil || !strings.HasPrefix(got, "-InternalError") {
				t.Fatalf("k %d: reply %q, %v; want -InternalError", k, got, err)
			}
			c.expect("e")
		}
		if cs, _ := s.limiterStats(); cs.Holders != 0 {
			t.Errorf("k %d: Limiter %+v after the read, want no holder", k, cs)
		}
		return depth
	}
	d2 := run(2)
	if d2 == 0 {
		t.Fatal("no flow of the pool recorded the read's failures")
	}
	for _, k := range []int{3, 8, 100} {
		if d := run(k); d != d2 {
			t.Errorf("the last of %d failures in a read failed %d frames deep, the last of 2 %d: want the same", k, d, d2)
		}
	}
	for _, x := range s.Metrics(context.Background()).Commands[0] {
		if x.Command == "SET" && (x.Started != 113 || x.Failed != 113) {
			t.Errorf("SET %+v, want 113 started and failed", x)
		}
		if x.Command == "ECHO" && (x.Started != 113 || x.Succeeded != 113) {
			t.Errorf("ECHO %+v, want 113 started and succeeded", x)
		}
	}
	c.sendRaw(resp("ECHO", "x"))
	c.expect("x")
	checkNoStrays(t, s)
}
