//go:build linux

package stepsd

import (
	"testing"
)

// The shard's parse slots are zero outside a direct head's OnData
// (parseDirect parses into them without zeroing each); reqsDirty marks
// them as maybe holding a parse until that OnData cleared them. An OnData
// that panicked between leaves the flag set, and the next direct head
// clears every slot first. A read that takes no direct head (its
// connection has a request in flight) must not drop the flag: it cleared
// nothing, and a later direct head would parse into the stale slots (a
// stale Bad answers a good request with an error).
func TestDirtySlotsSurviveAReadWithoutDirectHead(t *testing.T) {
	s := start(t, Config{Reactors: 1})
	sh := s.shards[0]
	b := dial(t, s)
	b.send("SLEEP 200")
	waitHolders(t, s, 1) // b has a request in flight: its next read takes no direct head
	done := make(chan struct{})
	sh.r.Immediate(func() {
		// What an OnData that panicked after parseDirect leaves.
		if len(sh.reqs) == 0 {
			sh.reqs = append(sh.reqs, Request{})
		}
		sh.reqs[0] = Request{Op: OpGet, Bad: badArity, Ms: 7}
		sh.reqsDirty = true
		close(done)
	})
	<-done
	b.sendRaw(resp("ECHO", "behind"))
	b.expect("OK", "behind")
	d := dial(t, s)
	d.sendRaw(resp("ECHO", "fresh"))
	d.expect("fresh")
	checkNoStrays(t, s)
}
