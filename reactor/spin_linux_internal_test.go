//go:build linux

package reactor

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// startLoop runs a real reactor with opts until the test ends.
func startLoop(t *testing.T, opts Options) *Reactor {
	t.Helper()
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run() }()
	t.Cleanup(func() {
		_ = r.Close()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})
	return r
}

// onLoop runs fn on r's loop and waits for it.
func onLoop(r *Reactor, fn func()) {
	done := make(chan struct{})
	r.xPost(func(unsafe.Pointer, uint64) { fn(); close(done) }, nil, 0)
	<-done
}

// waitAsleep waits until r's loop is about to block in epoll_wait.
func waitAsleep(r *Reactor) {
	for !r.sleeping.Load() {
		runtime.Gosched()
	}
}

// A loop whose posts come long after it went to sleep, or that is woken
// by I/O only, learns nothing and never spins: the adaptive default keeps
// an idle reactor, or one driven by its sockets, sleeping at once.
func TestAdaptiveSpinNotForSlowPostsOrIO(t *testing.T) {
	r := startLoop(t, Options{CPU: -1})
	var learned time.Duration // the most the loop learned, read on the loop
	note := func() { learned = max(learned, r.os.adapt.budget) }
	slowly := func(fn func()) {
		waitAsleep(r)
		time.Sleep(time.Millisecond) // slept at least this long: longer than any spin
		onLoop(r, fn)
	}
	check := func(what string) {
		t.Helper()
		var m Metrics
		slowly(func() { note(); m = r.LoopMetrics() })
		if m.Spins != 0 || learned != 0 {
			t.Fatalf("%s: %d spins, learned a %v spin; want none", what, m.Spins, learned)
		}
	}
	for range 20 {
		slowly(note)
	}
	check("posts 1ms after the loop slept")

	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	got := make(chan struct{}, 1)
	slowly(func() {
		_ = r.xWatch(efd, InterestRead, func(unsafe.Pointer, int, Event) {
			var buf [8]byte
			_, _ = unix.Read(efd, buf[:])
			note()
			got <- struct{}{}
		}, nil)
	})
	one := [8]byte{1}
	for range 200 {
		waitAsleep(r)
		_, _ = unix.Write(efd, one[:]) // I/O as soon as the loop sleeps
		<-got
	}
	check("I/O right after the loop slept")
}

// What the policy asks for, the loop does, and it reports back: a spin
// that finds work counts in SpinsFound and keeps the spin (capped); one
// that finds nothing turns it off. NoSpin never spins, whatever was
// learned.
func TestAdaptiveSpinRunsAndReports(t *testing.T) {
	if forcePolling {
		t.Skip("gnet's Polling fallback never spins adaptively")
	}
	r := startLoop(t, Options{CPU: -1})
	// Asked for on the loop: the loop runs out of work right after and
	// spins, long enough that only the post below can end the spin.
	r.xPost(func(unsafe.Pointer, uint64) { r.os.adapt.budget = time.Hour }, nil, 0)
	for spinning.Load() == 0 {
		runtime.Gosched()
	}
	var m Metrics
	var a adaptiveSpin
	onLoop(r, func() { m, a = r.LoopMetrics(), r.os.adapt })
	if m.Spins != 1 || m.SpinsFound != 1 {
		t.Fatalf("after a spin ended by a post: %d spins, %d found; want 1, 1", m.Spins, m.SpinsFound)
	}
	if a.budget != adaptiveMaxSpin {
		t.Fatalf("after a hit: budget %v, want the cap %v", a.budget, adaptiveMaxSpin)
	}
	// The next sleep follows a spin of at most the cap that nothing ends
	// (what the miss did to the policy: TestAdaptiveSpinPolicy).
	waitAsleep(r)
	onLoop(r, func() { m = r.LoopMetrics() })
	if m.Spins != 2 || m.SpinsFound != 1 {
		t.Fatalf("after a spin that found nothing: %d spins, %d found; want 2, 1", m.Spins, m.SpinsFound)
	}

	off := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	off.xPost(func(unsafe.Pointer, uint64) { off.os.adapt.budget = time.Hour }, nil, 0)
	waitAsleep(off)
	onLoop(off, func() { m = off.LoopMetrics() })
	if m.Spins != 0 {
		t.Fatalf("NoSpin: %d spins", m.Spins)
	}
}
