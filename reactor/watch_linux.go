//go:build linux

package reactor

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/panjf2000/gnet/v2/pkg/netpoll"
	"github.com/panjf2000/gnet/v2/pkg/queue"
	"golang.org/x/sys/unix"
)

// ioWatch is one watched descriptor's registration, indexed by fd in osLoop.io.
type ioWatch struct {
	cb  ioFunc
	arg unsafe.Pointer
	in  Interest // what epoll is asked for; 0 = not in epoll
	gen uint32   // bumped by Unwatch: events read before it are stale
	// fresh (Polling fallback only): watched while a batch of events gnet
	// read may still hold the previous owner's event for this number. Its
	// events are dropped until gnet's next round of chores (clearFresh); a
	// level-triggered watch has them reported again after it, and an
	// edge-triggered one (InterestHangup alone) is re-armed by dispatch as
	// it drops one, so that a peer's shutdown is not lost.
	fresh bool
}

// dispatch handles one ready descriptor. It does not recover a
// callback's panic: its callers do, poll once per batch (dispatchBatch),
// the Polling fallback once per event (safeDispatch).
// A stale event (gen differs: fd was unwatched, and maybe watched again by
// a new owner, earlier in the same batch) is dropped.
func (r *Reactor) dispatch(fd int, ev netpoll.IOEvent, gen uint32) {
	l := r.os
	switch fd {
	case l.efd:
		// Readable: a producer wrote it, possibly after the loop last
		// drained it while sleeping was already set again. The turn
		// must drain it, or level-triggered epoll reports it forever.
		l.efdHot = true
	case l.tfd:
		var buf [8]byte
		_, _ = unix.Read(l.tfd, buf[:])
		l.armedAt = 0
	default:
		if fd < len(l.io) && l.io[fd].cb != nil && l.io[fd].gen == gen {
			w := &l.io[fd]
			if !w.fresh {
				w.cb(w.arg, fd, ioEvent(ev))
			} else if w.in == InterestHangup {
				// Dropped while fresh, and edge-triggered: epoll will not
				// report it again by itself (rearmEdges' case).
				_ = l.watchHangup(fd, true)
			}
		}
	}
}

// genOf is the current watch generation of fd.
func (l *osLoop) genOf(fd int) uint32 {
	if fd >= 0 && fd < len(l.io) {
		return l.io[fd].gen
	}
	return 0
}

// xWatch registers fd with the loop's poller: cb(arg, fd, ev) runs on the
// loop whenever fd is ready for what in asks (level-triggered). in may be
// 0: fd is known to the loop but not polled until SetInterest asks for
// something. Loop only; at most one watch per fd. The network layer
// (package netio) is its user.
func (r *Reactor) xWatch(fd int, in Interest, cb ioFunc, arg unsafe.Pointer) error {
	l := r.os
	if l == nil {
		return errors.New("reactor: I/O needs a real reactor (New), not NewManual")
	}
	if fd < 0 || cb == nil {
		return errors.New("reactor: watch: bad fd or nil callback")
	}
	for len(l.io) <= fd {
		l.io = append(l.io, ioWatch{})
	}
	if l.io[fd].cb != nil {
		return fmt.Errorf("reactor: watch: fd %d is already watched", fd)
	}
	l.io[fd] = ioWatch{cb: cb, arg: arg, gen: l.io[fd].gen}
	if err := r.SetInterest(fd, in); err != nil {
		l.io[fd] = ioWatch{gen: l.io[fd].gen + 1}
		return err
	}
	if l.polling {
		// Under gnet's Polling the loop cannot snapshot a batch's
		// generations (poll does): hold the new watch's events back until
		// the batch being dispatched is over.
		l.io[fd].fresh = true
		if !l.freshPending {
			l.freshPending = true
			if err := l.poller.Trigger(queue.HighPriority, clearFresh, r); err != nil {
				l.freshPending = false
				l.io[fd].fresh = false // not delayed, as before this guard
			}
		}
	}
	return nil
}

// clearFresh is a chore of gnet's Polling: it runs on the loop after the
// batch that read gnet's wake-up, so every batch read before the Trigger
// that queued it has been dispatched. The watches made meanwhile get their
// events from now on.
func clearFresh(arg any) error {
	l := arg.(*Reactor).os
	l.freshPending = false
	for i := range l.io {
		l.io[i].fresh = false
	}
	return nil
}

// SetInterest changes what a watched fd is polled for. Going from a set
// with read to write alone takes two epoll_ctl calls (gnet's poller has no
// "modify to write-only"); every other change takes at most one, and none
// when in is unchanged. InterestHangup alone keeps fd in the poller for its
// hang-up and errors (edge-triggered; see InterestHangup); with read or
// write it is implied. Loop only.
func (r *Reactor) SetInterest(fd int, in Interest) error {
	l := r.os
	if l == nil || fd < 0 || fd >= len(l.io) || l.io[fd].cb == nil {
		return fmt.Errorf("reactor: fd %d is not watched", fd)
	}
	w := &l.io[fd]
	old := w.in
	in &= InterestRead | InterestWrite | InterestHangup
	if in&(InterestRead|InterestWrite) != 0 {
		in &^= InterestHangup // reported anyway: one registration per set
	}
	if in == old {
		return nil
	}
	pa := &netpoll.PollAttachment{FD: fd}
	var err error
	switch {
	case in == 0:
		err = l.poller.Delete(fd)
	case in == InterestHangup:
		err = l.watchHangup(fd, old != 0)
	case old == 0 || in == InterestWrite:
		if old != 0 {
			if err = l.poller.Delete(fd); err != nil {
				break
			}
		}
		switch in {
		case InterestRead:
			err = l.poller.AddRead(pa, false)
		case InterestWrite:
			err = l.poller.AddWrite(pa, false)
		default:
			err = l.poller.AddReadWrite(pa, false)
		}
	case in == InterestRead:
		err = l.poller.ModRead(pa, false)
	default:
		err = l.poller.ModReadWrite(pa, false)
	}
	if err != nil {
		// The descriptor is in an unknown state in epoll: leave it
		// out, so a retry starts from "not polled".
		_ = l.poller.Delete(fd)
		w.in = 0
		return err
	}
	w.in = in
	return nil
}

// watchHangup registers fd (added, or modified if it is in epoll already)
// for its hang-up and errors only: EPOLLRDHUP, with EPOLLHUP and EPOLLERR,
// which epoll always adds, edge-triggered so that a peer's shutdown that
// lasts while the input before it waits is reported once, not on every
// wait. gnet's Poller has no call for it: the loop's epoll descriptor
// takes it directly. Where that descriptor is unknown (a gnet layout
// pollerFD does not recognise), gnet's edge-triggered read stands in: it
// reports the same hang-ups and errors, and once per arrival of data too,
// which a callback that is not reading ignores.
func (l *osLoop) watchHangup(fd int, inEpoll bool) error {
	if l.epfd < 0 {
		pa := &netpoll.PollAttachment{FD: fd}
		if inEpoll {
			return l.poller.ModRead(pa, true)
		}
		return l.poller.AddRead(pa, true)
	}
	op := unix.EPOLL_CTL_ADD
	if inEpoll {
		op = unix.EPOLL_CTL_MOD
	}
	ev := unix.EpollEvent{Events: unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd)}
	return os.NewSyscallError("epoll_ctl", unix.EpollCtl(l.epfd, op, fd, &ev))
}

// rearmEdges re-registers the edge-triggered watches (InterestHangup
// alone) among the descriptors of a batch of events the loop drops (an
// assist ran while epoll_wait returned it; see unpark). epoll reported
// their edge in that batch and will not again by itself: a peer's shutdown
// that lasts would be lost. EPOLL_CTL_MOD looks at the descriptor's state
// afresh and queues it again if the hang-up or error is still there. An
// event of a watch the assist replaced costs a needless MOD, no more.
func (l *osLoop) rearmEdges(events []unix.EpollEvent) {
	for i := range events {
		fd := int(events[i].Fd)
		if fd >= 0 && fd < len(l.io) && l.io[fd].cb != nil && l.io[fd].in == InterestHangup {
			_ = l.watchHangup(fd, true) // a descriptor epoll no longer takes reports nothing anyway
		}
	}
}

// Unwatch forgets fd: it is no longer polled and its callback is dropped.
// Call it before closing fd. Loop only.
func (r *Reactor) Unwatch(fd int) error {
	l := r.os
	if l == nil || fd < 0 || fd >= len(l.io) || l.io[fd].cb == nil {
		return nil
	}
	in := l.io[fd].in
	l.io[fd] = ioWatch{gen: l.io[fd].gen + 1}
	if in == 0 {
		return nil
	}
	return l.poller.Delete(fd)
}

// ioEvent translates epoll's bits to ours.
func ioEvent(ev netpoll.IOEvent) Event {
	var e Event
	if ev&(unix.EPOLLIN|unix.EPOLLPRI) != 0 {
		e |= EventRead
	}
	if ev&unix.EPOLLRDHUP != 0 {
		e |= EventHangup
	}
	if ev&unix.EPOLLOUT != 0 {
		e |= EventWrite
	}
	if ev&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		e |= EventError
	}
	return e
}

// safeDispatch is dispatch with a callback's panic recovered (the
// panic handler has it, and the loop goes on).
func (r *Reactor) safeDispatch(fd int, ev netpoll.IOEvent, gen uint32) {
	defer r.recoverPanic()
	r.dispatch(fd, ev, gen)
}

// dispatchBatch dispatches events[next:] of a batch epoll_wait returned
// (gens: their generations, as the batch began) and returns len(events).
// A callback that panics ends it early: the panic handler has the panic
// and dispatchBatch returns the index after that event, so that poll
// calls it again for the rest of the batch. One deferred recover per
// batch rather than one per callback (a deferred call, its recover and a
// frame: about 80 instructions a ready descriptor, at pipeline 1 a
// request).
//
// The loop's index, not recover's value, tells a panic from a return: under
// GODEBUG=panicnil=1 a panic(nil) recovers as nil, and a batch resumed at
// that event would deliver it again (and a callback that always does so
// would spin the loop). The deferred call then costs a compare on the
// common path, not a recover. A runtime.Goexit leaves the same way and
// ends the loop's goroutine; recover returns nil for it and does not stop
// it.
func (r *Reactor) dispatchBatch(events []unix.EpollEvent, gens []uint32, next int) (after int) {
	after = next
	defer func() {
		if after < len(events) { // left the loop early: a panic (or Goexit)
			after++ // the event whose callback panicked is done
			if v := recover(); v != nil {
				r.panicHandler(v)
			}
		}
	}()
	for ; after < len(events); after++ {
		r.dispatch(int(events[after].Fd), netpoll.IOEvent(events[after].Events), gens[after])
	}
	return after
}
