//go:build linux

package reactor

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// dueInBatch is the state of TestTimerDueDuringBatchFires (loop-owned but
// for fired).
type dueInBatch struct {
	r        *Reactor
	deadline uint64
	fired    chan uint64
}

// onDueInBatch drains the pipe, makes a timer one tick out and runs past
// its deadline before it returns: the timer comes due after the wake's
// clock read, which the turn's first look at timers takes its tick from.
func onDueInBatch(p *dueInBatch, fd int, _ Event) {
	var buf [8]byte
	_, _ = unix.Read(fd, buf[:])
	p.deadline = p.r.deadlineTick(p.r.Tick())
	AfterTo(p.r, p.r.Tick(), fireDueInBatch, p, 0)
	for p.r.currentTick() < p.deadline {
	}
}

func fireDueInBatch(p *dueInBatch, _ uint64) { p.fired <- p.r.currentTick() }

// A timer that comes due while the batch's I/O callbacks run, after the
// clock read of the wake that loopTick stands in for, still fires, not
// early, with nothing else to wake the loop: the turn arms the timerfd for
// its past deadline (or its last look before sleeping reads the clock).
func TestTimerDueDuringBatchFires(t *testing.T) {
	for _, spin := range []time.Duration{0, NoSpin} {
		r := startLoop(t, Options{CPU: -1, Spin: spin})
		var fds [2]int
		if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		p := &dueInBatch{r: r, fired: make(chan uint64, 1)}
		var werr error
		onLoop(r, func() { werr = WatchTo(r, fds[0], InterestRead, onDueInBatch, p) })
		if werr != nil {
			t.Fatal(werr)
		}
		// The write is the loop's only wake-up from here on.
		if _, err := unix.Write(fds[1], []byte{1}); err != nil {
			t.Fatal(err)
		}
		select {
		case at := <-p.fired:
			if at < p.deadline {
				t.Fatalf("spin %v: the timer fired at tick %d, before its deadline %d", spin, at, p.deadline)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("spin %v: a timer that came due during the batch never fired", spin)
		}
		onLoop(r, func() { _ = r.Unwatch(fds[0]) })
		unix.Close(fds[0])
		unix.Close(fds[1])
	}
}
