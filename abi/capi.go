package abi

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"runtime/cgo"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// The entry points of asyncsteps.h, for programs linked with the C library
// (make cabi). Handles given to C are C memory holding a cgo.Handle.

type cReactor struct {
	r    *reactor.Reactor
	done chan error // started reactors: Run's result
}

func reactorBox(p *C.struct_AsyncStepsReactor) *cReactor {
	if p == nil {
		panic("asyncsteps: NULL AsyncStepsReactor*")
	}
	return cgo.Handle(p.handle).Value().(*cReactor)
}

func newCReactor(box *cReactor) *C.struct_AsyncStepsReactor {
	p := (*C.struct_AsyncStepsReactor)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_AsyncStepsReactor{}))))
	p.handle = C.uintptr_t(cgo.NewHandle(box))
	return p
}

//export asyncsteps_reactor_manual
func asyncsteps_reactor_manual() *C.struct_AsyncStepsReactor {
	return newCReactor(&cReactor{r: reactor.NewManual()})
}

//export asyncsteps_reactor_start
func asyncsteps_reactor_start(cpu C.int) *C.struct_AsyncStepsReactor {
	return startReactor(cpu, false)
}

//export asyncsteps_reactor_start_own_thread
func asyncsteps_reactor_start_own_thread(cpu C.int) *C.struct_AsyncStepsReactor {
	return startReactor(cpu, true)
}

// startReactor starts a reactor for C: pinned to cpu when cpu >= 0, and
// with own, every callback kept on the loop's thread (reactor.Options.OwnThread:
// no execute, success or handle_error from another thread runs a step on
// that thread, which the C ABI otherwise lets it do while the loop is idle).
func startReactor(cpu C.int, own bool) *C.struct_AsyncStepsReactor {
	opts := reactor.Options{CPU: -1, OwnThread: own}
	if cpu >= 0 {
		opts = reactor.Options{CPU: int(cpu), Pin: true, OwnThread: own}
	}
	r, err := reactor.New(opts)
	if err != nil {
		return nil
	}
	box := &cReactor{r: r, done: make(chan error, 1)}
	go func() { box.done <- r.Run() }()
	return newCReactor(box)
}

//export asyncsteps_reactor_run_until_idle
func asyncsteps_reactor_run_until_idle(p *C.struct_AsyncStepsReactor) {
	box := reactorBox(p)
	if box.done != nil {
		panic("asyncsteps_reactor_run_until_idle: the reactor was started; only manual reactors are driven by the caller")
	}
	box.r.RunUntilIdle()
}

//export asyncsteps_reactor_iterate
func asyncsteps_reactor_iterate(p *C.struct_AsyncStepsReactor) C.int {
	box := reactorBox(p)
	if box.done != nil {
		panic("asyncsteps_reactor_iterate: the reactor was started; only manual reactors are driven by the caller")
	}
	if box.r.Iterate() {
		return 1
	}
	return 0
}

//export asyncsteps_reactor_advance
func asyncsteps_reactor_advance(p *C.struct_AsyncStepsReactor, ms C.uint32_t) {
	box := reactorBox(p)
	if box.done != nil {
		panic("asyncsteps_reactor_advance: the reactor was started; only a manual reactor has a virtual clock")
	}
	box.r.Advance(time.Duration(ms) * time.Millisecond)
}

//export asyncsteps_reactor_free
func asyncsteps_reactor_free(p *C.struct_AsyncStepsReactor) {
	box := reactorBox(p)
	box.r.Close()
	if box.done != nil {
		<-box.done
	}
	cgo.Handle(p.handle).Delete()
	C.free(unsafe.Pointer(p))
}

//export asyncsteps_new
func asyncsteps_new(p *C.struct_AsyncStepsReactor) *C.FutoInAsyncSteps {
	return newRoot(reactorBox(p).r)
}

func newCSync(s engine.Sync) *C.FutoInSync {
	p := (*C.asx_sync)(C.calloc(1, C.size_t(unsafe.Sizeof(C.asx_sync{}))))
	C.asx_init_sync(p)
	p.handle = C.uintptr_t(cgo.NewHandle(s))
	return &p.base
}

//export asyncsteps_mutex_new
func asyncsteps_mutex_new(max, maxQueue C.uint32_t) *C.FutoInSync {
	return newCSync(syncprim.NewMutex(max1(max), queueLen(uint32(maxQueue))))
}

//export asyncsteps_throttle_new
func asyncsteps_throttle_new(p *C.struct_AsyncStepsReactor, max, periodMs, maxQueue C.uint32_t) *C.FutoInSync {
	period := time.Duration(periodMs) * time.Millisecond
	if period == 0 {
		period = time.Second
	}
	return newCSync(syncprim.NewThrottle(reactorBox(p).r, max1(max), period, queueLen(uint32(maxQueue))))
}

// cNoQueue is asyncsteps.h's ASYNCSTEPS_NO_QUEUE (UINT32_MAX); the header
// is not in this file's preamble (its prototypes would clash with cgo's
// exports), hence the copy.
const cNoQueue = ^uint32(0)

// queueLen is the Go queue length of a C max_queue: ASYNCSTEPS_NO_QUEUE
// is syncprim.NoQueue, 0 unlimited (the spec's null), as in Go.
func queueLen(v uint32) int {
	if v == cNoQueue {
		return syncprim.NoQueue
	}
	return int(v)
}

//export asyncsteps_limiter_new
func asyncsteps_limiter_new(p *C.struct_AsyncStepsReactor, concurrent, maxQueue, rate, periodMs, burst C.uint32_t) *C.FutoInSync {
	return newCSync(syncprim.NewLimiter(reactorBox(p).r, syncprim.LimiterOptions{
		Concurrent: int(concurrent), MaxQueue: int(maxQueue), Rate: int(rate),
		Period: time.Duration(periodMs) * time.Millisecond, Burst: int(burst),
	}))
}

func max1(v C.uint32_t) int {
	if v == 0 {
		return 1
	}
	return int(v)
}

//export asyncsteps_sync_free
func asyncsteps_sync_free(s *C.FutoInSync) {
	if s == nil {
		return
	}
	if C.asx_sync_is_ours(s) == 0 {
		panic("asyncsteps_sync_free: not a sync object made by asyncsteps_*_new")
	}
	p := (*C.asx_sync)(unsafe.Pointer(s))
	cgo.Handle(p.handle).Delete()
	C.free(unsafe.Pointer(p))
}

// syncOf returns the engine.Sync behind a FutoInSync*: ours directly, a
// foreign one through its lock and unlock.
func syncOf(s *C.FutoInSync) engine.Sync {
	if C.asx_sync_is_ours(s) != 0 {
		return cgo.Handle((*C.asx_sync)(unsafe.Pointer(s)).handle).Value().(engine.Sync)
	}
	return foreignSync{s: s}
}

// foreignSync runs a section under another implementation's FutoInSync
// (spec 2.7.3): a step calls lock on its own FutoInAsyncSteps* (lock may
// make it wait, or fail it), the section follows as its sibling, and
// unlock runs once however the section ends, if lock succeeded.
type foreignSync struct{ s *C.FutoInSync }

func (fs foreignSync) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	as.Add(func(as *engine.Steps) {
		locked := false
		as.SetFinally(func(as *engine.Steps) {
			if locked {
				C.asx_sync_unlock(fs.s, (*C.FutoInAsyncSteps)(Binary(as)))
			}
		})
		as.Add(func(as *engine.Steps) {
			C.asx_sync_lock(fs.s, (*C.FutoInAsyncSteps)(Binary(as)))
		})
		as.Add(func(as *engine.Steps) {
			locked = true
			as.Add(f, onerror)
		})
	})
}

//export asxGoSyncLock
func asxGoSyncLock(bsi *C.FutoInAsyncSteps, s *C.FutoInSync, l C.int) {
	if bsi == nil || s == nil {
		return
	}
	if l != 0 {
		lock(bsi, s)
	} else {
		unlock(bsi, s)
	}
}
