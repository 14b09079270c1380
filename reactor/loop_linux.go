//go:build linux

package reactor

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	gerrors "github.com/panjf2000/gnet/v2/pkg/errors"
	"github.com/panjf2000/gnet/v2/pkg/netpoll"
	"golang.org/x/sys/unix"

	"github.com/asyncsteps/asyncsteps/internal/goid"
)

// osLoop is the part of a Reactor that exists only for a real loop: the
// gnet poller and the two file descriptors it watches for us.
//
// The loop and the poller agree on this contract (gnet's Polling calls our
// callback for each ready descriptor, blocking in epoll_wait when there is
// nothing to do):
//
//   - efd, an eventfd registered level-triggered, is readable exactly when
//     the loop has work that is not driven by a timer or by I/O. The loop
//     leaves it readable while it still has work after a turn (so Polling
//     calls back at once), and reads it empty before it sleeps.
//   - Producers write efd only when the loop may be asleep: the loop sets
//     sleeping before its last look for work; a producer that pushed work
//     and then sees sleeping set (and wins the CAS clearing it) writes. One
//     of the two always sees the other, so no wake-up is lost and a busy
//     loop costs producers no syscall.
//   - tfd, a timerfd on CLOCK_MONOTONIC, is armed (absolute) for the timer
//     wheel's next deadline whenever the loop goes to sleep, and only
//     re-armed when that deadline changes: an idle reactor sleeps without
//     spinning and without a periodic tick.
type osLoop struct {
	poller    *netpoll.Poller
	efd, tfd  int
	cpu       int
	unlocked  bool // Options.Unlocked (and not pinned): Run does not lock its thread
	ownThread bool // Options.OwnThread: no goroutine runs this loop's turns in its place
	// loopID is the identity of the goroutine that runs the loop (Run),
	// set once before it is published in loopSlots: not loopG, which a
	// hand-off or an assist lends to other goroutines.
	loopID uintptr

	epochMono int64 // CLOCK_MONOTONIC at epoch, in ns: the timerfd's origin
	armedAt   int64 // absolute deadline tfd is armed for; 0 = disarmed
	efdHot    bool  // the loop left efd readable (it has work)
	fastPath  bool  // Run waits in our own epoll_wait (poll); set before the loop starts
	polling   bool  // Run fell back to gnet's Polling; set before the loop starts
	// Polling fallback only, for the metrics (onEvent): when the last
	// callback returned, and whether its turn left the loop idle.
	lastReturn int64
	idle       bool
	// freshPending: a clearFresh chore is queued in gnet's Poller (Polling
	// fallback only; see ioWatch.fresh).
	freshPending bool

	// assists counts the turns Assist ran while the loop was parked; the
	// loop compares it across its wait (unpark). Under the loop word.
	assists uint64
	// turnChanges is the wheel's count when a goroutine took the parked
	// word to run a turn after its own change (xTakeParkedRun): the turn's
	// onlyFlows test. Under the loop word.
	turnChanges uint64

	// The adaptive spin (Options.Spin 0; spin.go): what the loop learned,
	// and how many loops of the process may spin at once.
	adapt   adaptiveSpin
	spinCap int32

	io []ioWatch // by fd: I/O callbacks of descriptors watched through the poller
	// epfd is the poller's epoll descriptor (pollerFD) or -1: for the one
	// registration gnet's Poller has no call for (InterestHangup alone).
	epfd int
	// lastYield is when an unlocked loop last passed the Go scheduler
	// (poll, yieldEvery); nanotime.
	lastYield int64
	// epochNano is r.epoch on nanotime's clock (nanotime() - epochNano =
	// time.Since(r.epoch), to the nanosecond: both are monotonic
	// readings), and tickFresh says that the clock read when the loop last
	// woke (r.m.now) may stand in for the wheel's current tick (loopTick).
	epochNano int64
	tickFresh bool
}

// yieldEvery is how often an unlocked loop that keeps going to sleep
// passes the Go scheduler (runtime.Gosched) just before it blocks in
// epoll_wait. The loop never parks its goroutine, so without it the P's
// schedtick never moves; after forcePreemptNS (10 ms) of that, sysmon
// treats the loop as a goroutine that hogs its P: at each of its ticks it
// asks it to yield and, if the loop sits in a system call (epoll_wait,
// read, write: most of the time at pipeline 1), takes its P away at once,
// which puts sysmon on its shortest 20 µs period for good. On 2 cores
// shared with a client that was every second request's worth of
// context switches, and the reactor thread preempted by sysmon
// 30-60 times per 1000 requests (profiles/notes/2026-11-27-p99-round7.md).
// One yield every 2 ms (at most 500 a second, only while the loop keeps
// waking) keeps the schedtick fresh well inside sysmon's 10 ms; it is
// taken only when the loop has nothing to do, so no work waits for it.
// A locked loop does not yield: there a yield hands the P to another
// thread and back.
const yieldEvery = 2 * time.Millisecond

// New returns a reactor with a real loop: a gnet netpoll Poller, an eventfd
// to wake it and a timerfd to fire its timer wheel. Run it with Run,
// usually on its own goroutine; it pins its OS thread to opts.CPU when
// opts.Pin is set. A setting it cannot honour is an error (Options).
func New(opts Options) (*Reactor, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	cpu := -1
	if opts.Pin {
		cpu = opts.CPU
	}
	r := newReactor(opts, false)
	l := &osLoop{efd: -1, tfd: -1, cpu: cpu, unlocked: opts.Unlocked, ownThread: opts.OwnThread, spinCap: int32(max(1, runtime.GOMAXPROCS(0)/2))}
	var err error
	fail := func(what string, e error) (*Reactor, error) {
		l.closeFDs()
		return nil, fmt.Errorf("reactor: %s: %w", what, e)
	}
	if l.poller, err = netpoll.OpenPoller(); err != nil {
		return fail("open poller", err)
	}
	if l.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fail("eventfd", os.NewSyscallError("eventfd", err))
	}
	if l.tfd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
		return fail("timerfd", os.NewSyscallError("timerfd_create", err))
	}
	if err = l.poller.AddRead(&netpoll.PollAttachment{FD: l.efd}, false); err != nil {
		return fail("watch eventfd", err)
	}
	if err = l.poller.AddRead(&netpoll.PollAttachment{FD: l.tfd}, false); err != nil {
		return fail("watch timerfd", err)
	}
	l.epfd = pollerFD(l.poller, l.efd)
	// The Go epoch is taken before the monotonic reading, so a timerfd
	// deadline computed from epochMono is never earlier than the same tick
	// on the reactor's clock: a timer cannot wake the loop too soon.
	r.epoch = time.Now()
	var ts unix.Timespec
	if err = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return fail("clock", os.NewSyscallError("clock_gettime", err))
	}
	l.epochMono = ts.Nano()
	l.epochNano = int64(r.epoch.Sub(processStart))
	r.os = l
	r.wake = r.wakeLoop
	return r, nil
}

// checkCPU reports whether this process may run on cpu.
func checkCPU(cpu int) error {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return fmt.Errorf("reactor: Options.CPU %d: %w", cpu, os.NewSyscallError("sched_getaffinity", err))
	}
	if cpu >= len(set)*64 || !set.IsSet(cpu) {
		return fmt.Errorf("reactor: Options.CPU %d: not a CPU this process may run on (%d allowed)", cpu, set.Count())
	}
	return nil
}

func (l *osLoop) closeFDs() {
	if l.poller != nil {
		_ = l.poller.Close()
		l.poller = nil
	}
	for _, fd := range []*int{&l.efd, &l.tfd} {
		if *fd >= 0 {
			_ = unix.Close(*fd)
			*fd = -1
		}
	}
}

var one = [8]byte{1}

// wakeLoop is called by producers after they pushed work: it writes the
// eventfd if, and only if, the loop may be asleep.
//
// Only this slow path counts itself in pushing, so that shutdown closes
// the eventfd under no write; a post to a busy loop costs one load here.
func (r *Reactor) wakeLoop() {
	if r.sleeping.Load() && r.sleeping.CompareAndSwap(true, false) {
		if r.loopG.Load() == parkedG && owe(r) {
			return // the posting loop runs r's turn after its callback (handoff_linux.go)
		}
		r.kickNow()
	}
}

// kickNow writes efd for a producer that took the duty to (it cleared
// sleeping), unless shutdown is closing the descriptor.
func (r *Reactor) kickNow() {
	r.pushing.Add(1)
	if !r.fdsClosing.Load() {
		r.kick()
	}
	r.pushing.Add(-1)
}

// kick makes efd readable.
func (r *Reactor) kick() {
	for {
		_, err := unix.Write(r.os.efd, one[:])
		if err != unix.EINTR {
			return // EAGAIN: the counter is saturated, so it is readable anyway
		}
	}
}

// Run runs the loop on the calling goroutine, locked to its OS thread and
// pinned to Options.CPU, until Close. It returns nil after Close. What
// happens at Close is documented there.
func (r *Reactor) Run() error {
	if r.manual {
		return ErrManual
	}
	if !r.started.CompareAndSwap(false, true) {
		if r.closed.Load() {
			<-r.done // Close got here first (or raced Run): nothing to run
			return nil
		}
		return errors.New("reactor: Run called twice")
	}
	l := r.os
	defer r.closeDone()
	if r.closed.Load() {
		r.shutdown()
		return nil
	}
	if l.cpu >= 0 || !l.unlocked {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if l.cpu >= 0 {
		// The thread goes back to the runtime when Run returns: give it
		// back with the affinity it came with.
		var old, set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err == nil {
			defer unix.SchedSetaffinity(0, &old)
		}
		set.Set(l.cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			r.shutdown()
			return fmt.Errorf("reactor: pin to CPU %d: %w", l.cpu, err)
		}
	}
	// Become the loop. A goroutine that took the loop's role for a moment
	// before Run (IsValid or Cancel on an idle reactor) is waited out.
	me := goid.Current()
	for !r.loopG.CompareAndSwap(0, me) {
		runtime.Gosched()
	}
	markLoop(me)
	l.loopID = me
	slot := loopSlot(me)
	inSlot := slot.CompareAndSwap(nil, r) // publishes loopID
	if !inSlot {
		loopsOffSlot.Add(1) // isLoop must look in loops for this one
	}
	loops.Store(me, r)
	defer func() {
		loops.Delete(me)
		if inSlot {
			slot.Store(nil)
		} else {
			loopsOffSlot.Add(-1)
		}
	}()
	var err error
	if epfd := pollerFD(l.poller, l.efd); epfd >= 0 && !forcePolling {
		l.fastPath = true
		err = r.poll(epfd)
	} else {
		l.polling = true
		r.kick() // run whatever was posted before Run
		l.efdHot = true
		err = l.poller.Polling(r.onEvent)
	}
	r.shutdown()
	r.loopG.Store(0)
	if err != nil && !errors.Is(err, errStopped) && !errors.Is(err, gerrors.ErrEngineShutdown) {
		return fmt.Errorf("reactor: loop: %w", err)
	}
	return nil
}

// errStopped is how a turn ends the loop at Close. Only at the boundary
// with gnet's Polling (onEvent) does it become gnet's own sentinel, which
// Polling needs to return quietly; our poll loop never sees gnet's.
var errStopped = errors.New("reactor: loop stopped")

// maxIterPerTurn bounds the iterations of one turn, so ready I/O is looked
// at between them even while work keeps coming.
const maxIterPerTurn = 64

// onEvent is gnet Polling's callback (the fallback loop): one ready
// descriptor, then a turn. Work left keeps efd readable, so the next turn
// comes at once.
//
// Metrics under Polling are taken between callbacks, since gnet's wait is
// not ours: the time since the last callback returned counts as poll time
// (gnet's own work between callbacks of a batch included), and a callback
// after a turn that found nothing to do is a wake-up.
func (r *Reactor) onEvent(fd int, ev netpoll.IOEvent, _ netpoll.IOFlags) error {
	l := r.os
	t1 := nanotime()
	if l.lastReturn != 0 {
		r.m.pollNanos += t1 - l.lastReturn
	}
	if l.idle {
		r.m.wakeups++
	}
	r.m.now = t1
	r.safeDispatch(fd, ev, l.genOf(fd))
	more, err := r.turn()
	if more && !l.efdHot {
		r.kick()
		l.efdHot = true
	}
	l.lastReturn = nanotime()
	r.m.runNanos += l.lastReturn - t1
	l.idle = !more
	if err == errStopped {
		return gerrors.ErrEngineShutdown // Polling returns it without complaint
	}
	return err
}

// nanotime is the monotonic clock, cheaper than time.Now.
func nanotime() int64 { return int64(time.Since(processStart)) }

var processStart = time.Now()

// pollEvents is how many ready descriptors one epoll_wait returns at most.
const pollEvents = 256

// poll is the loop: epoll_wait on the poller's epoll instance, every ready
// descriptor, then one turn. It blocks only when the turn found nothing
// left to do.
//
// It replaces gnet's Polling, which yields (runtime.Gosched) each time a
// non-blocking epoll_wait finds nothing, before it blocks: on our locked
// thread a yield is a hand-off of the P to another thread and back, two
// thread switches per idle transition, which tripled a loopback request's
// round trip (51 µs against 16 µs; profiles/README.md). The descriptors are
// registered through the Poller as before; only the wait is ours.
func (r *Reactor) poll(epfd int) error {
	l := r.os
	events := make([]unix.EpollEvent, pollEvents)
	gens := make([]uint32, pollEvents)
	msec := 0 // whatever was posted before Run runs at once
	t0 := nanotime()
	me := r.loopG.Load()
	for {
		var n int
		var err error
		if msec == 0 {
			n, err = unix.EpollWait(epfd, events, msec)
		} else {
			// Parked: a goroutine waiting for this reactor's work may
			// run it meanwhile (Assist, assist_linux.go).
			assists := l.assists
			r.park()
			n, err = unix.EpollWait(epfd, events, msec)
			if r.unpark(me, assists) {
				// Stale: epoll_wait(0) reports again what is still
				// ready, except where a watch is edge-triggered.
				if n > 0 {
					l.rearmEdges(events[:n])
				}
				n, err = 0, nil
			}
		}
		if err != nil && err != unix.EINTR {
			return os.NewSyscallError("epoll_wait", err)
		}
		// Metrics: two clock reads per wait, not per task.
		t1 := nanotime()
		r.m.pollNanos += t1 - t0
		r.m.now = t1
		l.tickFresh = true // loopTick
		if msec != 0 {
			r.m.wakeups++
			if r.spin == 0 && wokeByEventfd(events[:max(n, 0)], l.efd) {
				l.adapt.wokeByPost(time.Duration(t1 - t0))
			}
		}
		// The batch's events belong to the watches of the moment: a
		// callback may unwatch and close a descriptor whose number a
		// later callback of the batch reuses.
		for i := 0; i < n; i++ {
			gens[i] = l.genOf(int(events[i].Fd))
		}
		for i := 0; i < n; {
			i = r.dispatchBatch(events[:n], gens, i)
		}
		more, err := r.turn()
		l.tickFresh = false // a turn run in the parked loop's place reads the clock
		if err != nil {
			return err
		}
		t0 = nanotime()
		r.m.runNanos += t0 - t1
		msec = -1
		if more {
			msec = 0
		} else if l.unlocked && t0-l.lastYield >= int64(yieldEvery) {
			runtime.Gosched()
			// The wait starts after the yield: poll time and the
			// adaptive spin's "slept" must not count the scheduler's.
			t0 = nanotime()
			l.lastYield = t0
		}
	}
}

// loopTick is currentTick for an iteration's look at due timers. The
// first look after the loop woke from epoll_wait takes the tick from the
// clock read at the wake (poll's t1, CoarseNow's reading) instead of
// reading the clock again: with a timer always pending (netio's sweep, an
// engine's pool trim) every turn looks, so this is one clock read (about
// 80 instructions) fewer per wait, at pipeline 1 one per read. The tick it
// gives lags by what ran between the wake and that look: the batch's I/O
// callbacks, the turns they owe other loops (payOwed), the local queue and
// the ring's tasks of the iteration, and, where the turn's first
// iterations found no timer to look at, those iterations and their spins.
// A timer that comes due in that window fires late, never early: at the
// turn's next look, or, if the turn ends first, through the timerfd, which
// the turn arms for its (past) deadline, or hasReadyWork's own clock read
// (no timer is missed: TestTimerDueDuringBatchFires). Later looks read
// the clock, so the ticks the wheel is polled at never go back.
func (r *Reactor) loopTick() uint64 {
	if l := r.os; l != nil && l.tickFresh {
		l.tickFresh = false
		return uint64(time.Duration(r.m.now-l.epochNano) / r.tick)
	}
	return r.currentTick()
}

// pollerFD returns the epoll descriptor of gnet's Poller, which gnet does
// not export, or -1. It reads the struct's first field (fd, in every gnet
// v2 release so far) and trusts it only if that descriptor is an epoll
// instance already watching our eventfd: adding efd to it again must fail
// with EEXIST. Any other answer (a layout change) falls back to Polling.
func pollerFD(p *netpoll.Poller, efd int) int {
	fd := *(*int)(unsafe.Pointer(p))
	if fd < 0 {
		return -1
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}
	switch err := unix.EpollCtl(fd, unix.EPOLL_CTL_ADD, efd, &ev); err {
	case unix.EEXIST:
		return fd
	case nil:
		_ = unix.EpollCtl(fd, unix.EPOLL_CTL_DEL, efd, nil) // not ours: undo
	}
	return -1
}

// turn runs ready work and reports whether more is ready now. When none
// is, it gets the loop ready to sleep: efd drained, sleeping set, timerfd
// armed. Its error ends the loop (Close).
func (r *Reactor) turn() (more bool, err error) {
	l := r.os
	if r.closed.Load() {
		return false, errStopped
	}
	if len(r.owed) != 0 {
		r.payOwed() // owed by the I/O callbacks that ran before the turn
	}
	var spun time.Duration // spins that found work in this turn
	for i := 0; i < maxIterPerTurn; i++ {
		more = r.iterate()
		if len(r.owed) != 0 {
			// The turns it runs may have given this loop work (a
			// Mutex handed back, a local post): its iterate's answer is
			// stale, and the sleep path below would not see local or
			// engine work while sleeping is still set. Look again.
			r.payOwed()
			more = true
		}
		if !more {
			// Before going to sleep, look again for a while: work posted
			// in that window (another reactor's reply or hand-over, the
			// next request of a busy peer) is taken without the
			// producer's eventfd write and this loop's wake-up, which
			// cost more than the spin. What it finds runs in this turn:
			// going back to epoll_wait first would cost a syscall per
			// spin. A spin does not look at I/O, so once the turn's spins
			// add up to maxSpinPerTurn the turn ends and epoll_wait(0)
			// looks: ready I/O waits at most about two spins, not
			// maxIterPerTurn of them.
			found, took := r.spinBeforeSleep()
			if !found {
				break
			}
			more = true
			if spun += took; spun >= max(maxSpinPerTurn, r.spin) {
				break
			}
		}
		if r.closed.Load() {
			return false, errStopped // flows that never wait must not delay Close
		}
	}
	if r.closed.Load() {
		return false, errStopped
	}
	if more {
		return true, nil
	}
	if !l.efdHot && r.sleeping.Load() {
		// Still asleep as far as producers know: nobody kicked efd since
		// the last turn went to sleep (a kick clears sleeping first), and
		// any producer still pushing will see sleeping and kick. An I/O
		// event costs no eventfd read.
		return false, r.armTimer()
	}
	var buf [8]byte
	_, _ = unix.Read(l.efd, buf[:])
	l.efdHot = false
	r.sleeping.Store(true)
	if r.closed.Load() {
		// Close may have kicked efd between the check above and the
		// drain: its kick is gone, so nothing else would wake the loop.
		return false, errStopped
	}
	if r.hasReadyWork() {
		// Work arrived after the last iteration; a producer may or may
		// not have seen sleeping. Take the flag back and go round.
		r.sleeping.CompareAndSwap(true, false)
		return true, nil
	}
	return false, r.armTimer()
}

// spinBeforeSleep spins before the loop sleeps, if Options.Spin asks
// for it or the adaptive spin learned that it pays (spin.go), reporting
// whether the spin found work.
func (r *Reactor) spinBeforeSleep() (found bool, took time.Duration) {
	l := r.os
	d, adaptive := r.spin, r.spin == 0
	switch {
	case d < 0:
		return false, 0
	case adaptive:
		// As the Go scheduler caps its spinning threads: at most half the
		// Ps (and at least one) spin at once, so spinning loops never hold
		// every P away from the goroutines that post to them.
		if l.adapt.budget == 0 || !l.fastPath || !takeSpinSlot(l.spinCap) {
			return false, 0
		}
		d = l.adapt.budget
	}
	found, took = r.spinFor(d)
	if adaptive {
		spinning.Add(-1)
		l.adapt.spun(found, took)
	}
	r.m.spins++
	if found {
		r.m.spinsFound++
	}
	return found, took
}

// maxSpinPerTurn is how long the spins that found work may add up to in
// one turn before the turn ends to look at I/O (a fixed Options.Spin
// longer than it is its own bound).
const maxSpinPerTurn = adaptiveMaxSpin

// spinning counts the loops of the process in an adaptive spin.
var spinning atomic.Int32

// spinSlotTries is how many times a loop that finds every spin slot taken
// looks again (about a microsecond): in a ping-pong the loop holding the
// slot is usually the partner that is just taking this loop's post, and
// gives the slot back at once.
const spinSlotTries = 1024

// takeSpinSlot takes one of the limit slots of the adaptive spin, if one is
// free now or within spinSlotTries looks.
func takeSpinSlot(limit int32) bool {
	for range spinSlotTries {
		if n := spinning.Load(); n < limit && spinning.CompareAndSwap(n, n+1) {
			return true
		}
	}
	return false
}

// wokeByEventfd reports whether a wake-up's events include efd: work was
// posted from another thread (or Close).
func wokeByEventfd(events []unix.EpollEvent, efd int) bool {
	for i := range events {
		if int(events[i].Fd) == efd {
			return true
		}
	}
	return false
}

// spinFor looks for posted work for about d, reporting whether it found
// some and after how long. It stops early at the timer wheel's next
// deadline, so a spin never makes a timer late, and at Close. I/O that
// becomes ready meanwhile waits for the spin's end (Options.Spin). It reads
// the clock once every 64 looks: a look is two loads, the clock a call (a
// third of a spinning loop's samples when read every 32).
func (r *Reactor) spinFor(d time.Duration) (bool, time.Duration) {
	start := r.elapsed()
	end := start + d
	if next, ok := r.wheel.NextDeadline(); ok {
		end = min(end, time.Duration(next)*r.tick)
	}
	for i := 1; ; i++ {
		if !r.inbox.Empty() || r.overflow.active.Load() {
			return true, r.elapsed() - start
		}
		if i%64 == 0 {
			if r.closed.Load() {
				return true, 0 // the turn sees it and stops
			}
			if now := r.elapsed(); now >= end {
				return false, now - start
			}
		}
	}
}

// hasReadyWork reports whether anything is ready now, without running it.
// Under the loop's word: work.timers is loop-owned.
func (r *Reactor) hasReadyWork() bool {
	if r.inbox.Len() > 0 || r.overflow.active.Load() {
		return true
	}
	// No timer was added since a pass found the wheel empty (workWord):
	// no deadline to look up, and no clock read.
	if r.work.timers {
		if next, ok := r.wheel.NextDeadline(); ok && next <= r.currentTick() {
			return true
		}
	}
	if s := r.ext.Load(); s != nil && s.ready != nil {
		return s.ready()
	}
	return false
}

// armTimer arms the timerfd for the wheel's next deadline, if it changed.
// Its error ends the loop (Run returns it): a timerfd that could not be
// armed means the loop would sleep past its timers, a hang nobody could
// see.
func (r *Reactor) armTimer() error {
	l := r.os
	if !r.work.timers && l.armedAt == 0 {
		// The wheel is empty (workWord) and the timerfd disarmed: the
		// common case of a hand-off's borrowed turn, which touched no
		// timer (a cold line of the wheel less per crossing).
		return nil
	}
	next, ok := r.wheel.NextDeadline()
	if !ok {
		if l.armedAt != 0 {
			if err := unix.TimerfdSettime(l.tfd, 0, &unix.ItimerSpec{}, nil); err != nil {
				return os.NewSyscallError("timerfd_settime", err)
			}
			l.armedAt = 0
		}
		return nil
	}
	at := l.epochMono + int64(next)*int64(r.tick)
	if at == l.armedAt {
		return nil
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(at)}
	if err := unix.TimerfdSettime(l.tfd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		return os.NewSyscallError("timerfd_settime", err)
	}
	l.armedAt = at
	return nil
}

// shutdown runs on the loop's goroutine once the loop has stopped: tasks
// already accepted run, flows still running end, descriptors close.
func (r *Reactor) shutdown() {
	me := goid.Current()
	if r.loopG.Load() != me {
		// Close before Run: act as the loop for the shutdown only.
		for !r.loopG.CompareAndSwap(0, me) {
			runtime.Gosched()
		}
		defer r.loopG.Store(0)
	}
	r.closed.Store(true)
	// Every push the ring accepted counts in accepted (a producer may still
	// be publishing its slot: wait for it); every later one fails.
	accepted := r.inbox.Close()
	for r.inbox.Consumed() < accepted {
		t, ok := r.inbox.TryPop()
		if !ok {
			runtime.Gosched()
			continue
		}
		r.runTask(t, r.inbox.Consumed()-1)
	}
	// Under the overflow lock, taken after closed was set: a producer
	// appends to the overflow list only if it sees the reactor open under
	// that lock.
	r.drainOverflow() // accepted too: Post returned true for each
	// Timers already due were accepted work too (a loop-side Immediate is
	// one); bounded, so a callback that keeps rescheduling itself cannot
	// hold the shutdown.
	r.fireDue(r.currentTick())
	r.runLocal()
	r.runShutdownHooks()
	if s := r.ext.Load(); s != nil && s.close != nil {
		r.safeCall(s.close)
	}
	if len(r.owed) != 0 {
		r.payOwed()
	}
	if r.os != nil {
		// A producer that pushed before the ring closed may still be
		// about to write the eventfd (wakeLoop): let it finish, and make
		// any later one skip the write, before the descriptor is closed
		// and its number reused.
		r.fdsClosing.Store(true)
		for r.pushing.Load() != 0 {
			runtime.Gosched()
		}
		r.os.closeFDs()
	}
	// Its callbacks ran in no iteration: Loops made in them stop being
	// held before the word is given up (Run, or the deferred store above).
	r.loopGen++
}
