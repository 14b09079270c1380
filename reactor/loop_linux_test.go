//go:build linux

package reactor

import (
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A producer that wins the sleeping CAS but writes the eventfd only after
// the loop drained it and went back to sleep must not leave the eventfd
// readable forever: the loop would spin on it (found in review).
func TestLateKickDoesNotSpin(t *testing.T) {
	r, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	go r.Run()
	defer r.Close()
	waitSleeping := func() {
		for !r.sleeping.Load() {
			time.Sleep(time.Millisecond)
		}
	}
	for attempt := 1; ; attempt++ {
		fired := make(chan struct{})
		r.xPost(func(unsafe.Pointer, uint64) {
			r.xAfter(30*time.Millisecond, func(unsafe.Pointer, uint64) { close(fired) }, nil, 0)
		}, nil, 0)
		waitSleeping()
		if !r.sleeping.CompareAndSwap(true, false) { // a producer: CAS won, its write delayed
			t.Fatal("loop not asleep")
		}
		select {
		case <-fired:
			// This goroutine was descheduled past the timer (a loaded
			// machine): the loop had already slept again, and nothing
			// will wake it to set sleeping. Wake it and set up again.
			if attempt == 20 {
				t.Fatal("the timer always fired before the simulated producer")
			}
			r.kick()
			continue
		default:
		}
		<-fired // the timer woke the loop; it drained efd and set sleeping again
		break
	}
	waitSleeping()
	r.kick() // the producer's late write
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	time.Sleep(300 * time.Millisecond)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	if cpu > 150*time.Millisecond {
		t.Fatalf("idle loop spins: %v of CPU in 300ms", cpu)
	}
}

// An event read in the same epoll_wait batch as the callback that
// unwatched its descriptor goes nowhere, even when the number was reused
// by a new watch meanwhile.
func TestStaleEventAfterFDReuseIsDropped(t *testing.T) {
	r, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	go r.Run()
	defer r.Close()
	a, err1 := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	b, err2 := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	defer unix.Close(a)
	type result struct{ reused, staleCalled bool }
	res := make(chan result, 1)
	var out result
	newcb := func(unsafe.Pointer, int, Event) { out.staleCalled = true }
	onA := func(unsafe.Pointer, int, Event) {
		var buf [8]byte
		_, _ = unix.Read(a, buf[:])
		_ = r.Unwatch(a)
		// b's event is in this batch, behind a's: b goes, and a new
		// descriptor takes its number and a watch of its own.
		_ = r.Unwatch(b)
		_ = unix.Close(b)
		c, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			return
		}
		out.reused = c == b
		_ = r.xWatch(c, InterestRead, newcb, nil) // never written: any call is b's stale event
		r.xAfter(20*time.Millisecond, func(unsafe.Pointer, uint64) {
			_ = r.Unwatch(c)
			_ = unix.Close(c)
			res <- out
		}, nil, 0)
	}
	onB := func(unsafe.Pointer, int, Event) { t.Error("b's callback ran after its Unwatch") }
	r.xPost(func(unsafe.Pointer, uint64) {
		_ = r.xWatch(a, InterestRead, onA, nil)
		_ = r.xWatch(b, InterestRead, onB, nil)
		one := [8]byte{1}
		_, _ = unix.Write(a, one[:]) // both ready before the loop's next epoll_wait: one batch, a first
		_, _ = unix.Write(b, one[:])
	}, nil, 0)
	got := <-res
	if !got.reused {
		t.Skip("the new descriptor did not reuse the closed one's number")
	}
	if got.staleCalled {
		t.Fatal("the closed descriptor's event reached the new watch of its number")
	}
}

// An unlocked loop is still one loop: tasks and timers run on it, in
// order, and IsSameThread holds inside them wherever the runtime resumes it.
func TestUnlockedLoop(t *testing.T) {
	r, err := New(Options{CPU: -1, Unlocked: true})
	if err != nil {
		t.Fatal(err)
	}
	go r.Run()
	defer r.Close()
	const producers, per = 2, 5000
	seen := make([]int, producers)
	bad := 0
	done := make(chan struct{})
	for p := 0; p < producers; p++ {
		go func() {
			for i := 0; i < per; i++ {
				r.Immediate(func() {
					if !r.IsSameThread() || seen[p] != i {
						bad++
					}
					seen[p]++
				})
			}
			r.Deferred(2*time.Millisecond, func() { done <- struct{}{} })
		}()
	}
	<-done
	<-done
	got := make(chan [2]int)
	r.Immediate(func() { got <- [2]int{seen[0] + seen[1], bad} })
	if g := <-got; g[0] != producers*per || g[1] != 0 {
		t.Fatalf("%d tasks ran (want %d), %d out of order or off the loop", g[0], producers*per, g[1])
	}
}
