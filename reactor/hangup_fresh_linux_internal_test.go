//go:build linux

package reactor

import (
	"testing"
	"time"
	"unsafe"
)

// A hang-up watch is edge-triggered: epoll reports a peer's shutdown once.
// Under gnet's Polling a new watch is fresh until gnet's next round of
// chores, and dispatch drops its events meanwhile; a level-triggered
// watch gets them again after, an edge-triggered one would lose the
// hang-up for good (a closed peer never noticed). dispatch re-arms it.
// Both ways of registering it (hangupRegistrations).
func TestFreshHangupWatchKeepsItsEdge(t *testing.T) {
	for _, tc := range hangupRegistrations {
		t.Run(tc.name, func(t *testing.T) {
			r := startLoop(t, Options{CPU: -1})
			client, _, sfd := tcpPair(t)
			w := &hangupWatch{events: make(chan Event, 64)}
			var err error
			onLoop(r, func() {
				if tc.noEpfd {
					r.os.epfd = -1
				}
				err = r.xWatch(sfd, InterestHangup, onHangupWatch, unsafe.Pointer(w))
			})
			if err != nil {
				t.Fatal(err)
			}
			// Under Polling the watch's own clearFresh has run after two
			// round trips; fresh again, with no chore queued to clear it,
			// it stays so until the test clears it, whatever the build.
			for range 2 {
				onLoop(r, func() {})
			}
			onLoop(r, func() { r.os.io[sfd].fresh = true })
			t.Cleanup(func() { onLoop(r, func() { _ = r.Unwatch(sfd) }) })
			if err := client.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			// On loopback the shutdown is queued in epoll once CloseWrite
			// returns; the second round trip's wait comes after the batch
			// that held it, so the loop has met the edge while fresh.
			for range 2 {
				onLoop(r, func() {})
			}
			if n := w.calls.Load(); n != 0 {
				t.Fatalf("%d calls while the watch was fresh", n)
			}
			onLoop(r, func() { r.os.io[sfd].fresh = false }) // gnet's chore (clearFresh)
			select {
			case ev := <-w.events:
				if ev&EventHangup == 0 {
					t.Fatalf("event %b, want the hang-up", ev)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the peer's shutdown, met while the watch was fresh, was never reported")
			}
		})
	}
}
