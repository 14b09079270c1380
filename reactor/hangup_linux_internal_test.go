//go:build linux

package reactor

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// tcpPair returns a connected loopback pair: the client side, and the
// server side's descriptor (owned by the returned server conn, which the
// test keeps open until it ends).
func tcpPair(t *testing.T) (client *net.TCPConn, server *net.TCPConn, sfd int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(); _ = s.Close() })
	rc, err := s.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	_ = rc.Control(func(fd uintptr) { sfd = int(fd) })
	return c.(*net.TCPConn), s.(*net.TCPConn), sfd
}

// hangupWatch records the events of a watch under InterestHangup.
type hangupWatch struct {
	calls  atomic.Int32
	events chan Event
}

func onHangupWatch(arg unsafe.Pointer, _ int, ev Event) {
	w := (*hangupWatch)(arg)
	w.calls.Add(1)
	select {
	case w.events <- ev:
	default:
	}
}

// hangupRegistrations are the two ways a hang-up watch is registered: on
// the loop's epoll descriptor, and through gnet's edge-triggered read where
// that descriptor is unknown (noEpfd: the test hides it).
var hangupRegistrations = []struct {
	name   string
	noEpfd bool
}{{"epoll descriptor", false}, {"gnet edge-triggered read", true}}

// A descriptor whose reading is paused stays in the
// poller for its hang-up and errors. A peer's shutdown is reported once
// (edge-triggered: a handler that leaves it for later does not make the
// loop spin), its reset as EventError; data sent meanwhile raises nothing
// (on the fast path; gnet's edge-triggered read, the fallback where the
// epoll descriptor is unknown, reports each arrival too).
func TestInterestHangupReportsShutdownOnceAndReset(t *testing.T) {
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
				if err = r.xWatch(sfd, InterestRead, onHangupWatch, unsafe.Pointer(w)); err == nil {
					// Read interest with Hangup is one registration: no change.
					err = r.SetInterest(sfd, InterestRead|InterestHangup)
				}
				if err == nil {
					err = r.SetInterest(sfd, InterestHangup) // paused
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { onLoop(r, func() { _ = r.Unwatch(sfd) }) })
			next := func(what string, want Event) {
				t.Helper()
				deadline := time.After(5 * time.Second)
				for {
					select {
					case ev := <-w.events:
						if ev&want != 0 {
							return
						}
						if tc.noEpfd && ev&^(EventRead|EventHangup) == 0 {
							// The fallback's report of data: it asks for
							// EPOLLIN too, and the end of stream is
							// readable, so the shutdown's FIN can make a
							// second edge (Read, with the lasting Hangup).
							continue
						}
						t.Fatalf("%s: event %b, want %b", what, ev, want)
					case <-deadline:
						t.Fatalf("%s: no event", what)
					}
				}
			}
			if _, err := client.Write([]byte("paused input")); err != nil {
				t.Fatal(err)
			}
			if !tc.noEpfd {
				// The data's arrival raises nothing: a round trip on the
				// loop after it (the client's write is in the server's
				// queue once Write returns on loopback) finds no call.
				for range 3 {
					onLoop(r, func() {})
				}
				if n := w.calls.Load(); n != 0 {
					t.Fatalf("%d calls for data while only hang-up is asked", n)
				}
			}
			if err := client.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			next("peer's shutdown", EventHangup)
			// Reported once: several loop turns later there is no more.
			// The epoll descriptor's registration only: the fallback's
			// EPOLLIN may report the FIN again as data (above).
			before := w.calls.Load()
			for range 5 {
				onLoop(r, func() {})
				time.Sleep(time.Millisecond) // lets the loop wait in epoll again
			}
			if n := w.calls.Load(); n != before && !tc.noEpfd {
				t.Fatalf("the peer's shutdown was reported %d more times while it lasted", n-before)
			}
			_ = client.SetLinger(0)
			_ = client.Close() // RST
			next("peer's reset", EventError)
		})
	}
}

// An assist that runs while the loop's epoll_wait returns with events makes
// the loop drop that batch (its events may be stale) and ask epoll again.
// That is safe for level-triggered watches only: a hang-up watch is
// edge-triggered, and its one report must not be lost with the batch.
func TestInterestHangupSurvivesADroppedBatch(t *testing.T) {
	r := startLoop(t, Options{CPU: -1})
	client, _, sfd := tcpPair(t)
	w := &hangupWatch{events: make(chan Event, 64)}
	var err error
	onLoop(r, func() { err = r.xWatch(sfd, InterestHangup, onHangupWatch, unsafe.Pointer(w)) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { onLoop(r, func() { _ = r.Unwatch(sfd) }) })
	waitParked(t, r)
	pushQuiet(t, r, func(unsafe.Pointer, uint64) {
		// Inside the assist, under the loop word: the peer's shutdown
		// ends the loop's epoll_wait with the hang-up, and the loop then
		// waits for this turn to end before it looks at the batch.
		if err := client.CloseWrite(); err != nil {
			t.Error(err)
		}
		time.Sleep(50 * time.Millisecond)
	})
	if !r.Assist() {
		t.Fatal("Assist did not run a parked loop's turn")
	}
	select {
	case ev := <-w.events:
		if ev&EventHangup == 0 {
			t.Fatalf("event %b, want the hang-up", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the peer's shutdown, reported during an assist, was lost")
	}
}
