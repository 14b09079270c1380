//go:build linux

package reactor

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	gerrors "github.com/panjf2000/gnet/v2/pkg/errors"
)

// The loop reads gnet's Poller's epoll descriptor from an unexported field
// (pollerFD). If a gnet upgrade moves it, the loop still works, through
// Polling, at about three times the round-trip latency: these tests make
// that a failure instead of a silent slowdown.

func TestPollerFDIsGnetsEpollInstance(t *testing.T) {
	r, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd := pollerFD(r.os.poller, r.os.efd)
	if fd < 0 {
		t.Fatal("pollerFD found no epoll descriptor in gnet's Poller: its layout changed; update pollerFD for this gnet version")
	}
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		t.Fatal(err)
	}
	if link != "anon_inode:[eventpoll]" {
		t.Fatalf("pollerFD returned fd %d, which is %q, not an epoll instance", fd, link)
	}
}

func TestRunTakesTheFastPath(t *testing.T) {
	r, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run() }()
	done := make(chan struct{})
	r.Immediate(func() { close(done) })
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the loop did not run a posted callback")
	}
	// The loop set fastPath before it took the callback, so this read is
	// ordered after that write by done.
	if want := !forcePolling; r.os.fastPath != want {
		t.Errorf("fastPath = %v, want %v (forcePolling %v): the loop fell back to gnet's Polling", r.os.fastPath, want, forcePolling)
	}
	_ = r.Close()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestStopErrorIsOurs(t *testing.T) {
	r, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	r.closed.Store(true)
	r.loopG.Store(0)
	if _, err := r.turn(); err != errStopped {
		t.Errorf("turn on a closed reactor: %v, want errStopped", err)
	}
	// At the Polling boundary it becomes gnet's sentinel, which Polling
	// returns without complaint, and Run maps both to nil.
	if err := r.onEvent(r.os.efd, 0, 0); !errors.Is(err, gerrors.ErrEngineShutdown) {
		t.Errorf("onEvent on a closed reactor: %v, want gnet's shutdown sentinel", err)
	}
	r.os.closeFDs()
}
